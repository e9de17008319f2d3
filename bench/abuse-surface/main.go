// Command abuse-surface holds the probes of bench/abuse-surface.sh: the
// abuse of issue 22's front door (its items 4 to 9), against a sidecar on
// loopback, each bounded in time. Every probe prints one JSON object on
// stdout: the probe's name, its requests, and its answers by kind.
//
//	abuse-surface management -grpc ADDR -http ADDR -duration D
//	    every call of Triton's management API, over both protocols, in a
//	    loop (HTTP in several spellings), each a real request: an unload of
//	    -model, the model the well-behaved client calls, so that one call
//	    let through shows in its failures too;
//	abuse-surface slow -grpc ADDR -http ADDR -n N -duration D
//	    N connections of each kind, opened at once, never finishing what
//	    they started: idle TCP to HTTP, headers a byte a second, a body a
//	    byte a second, a kept-alive HTTP connection left idle, a gRPC call
//	    opened with no request, a gRPC connection left idle; and how long
//	    the sidecar took to close each (or end its call);
//	abuse-surface headers -grpc ADDR -http ADDR -duration D
//	    requests with headers of growing size (a cookie, or metadata) over
//	    both protocols, to a controllable model and passed through, by
//	    status per size;
//	abuse-surface conns -grpc ADDR -http ADDR -n N -duration D
//	    N connections to each listener kept open (reopened when closed): how
//	    many the sidecar accepts and how many it closes at once.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mergectl/react-triton/sidecar/config"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: abuse-surface management|slow|headers|conns [flags]")
		os.Exit(2)
	}
	probes := map[string]func([]string) error{"management": management, "slow": slow, "headers": headers, "conns": conns}
	run, ok := probes[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "abuse-surface: unknown probe %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "abuse-surface:", err)
		os.Exit(1)
	}
}

// tally counts answers by kind, safely.
type tally struct {
	mu sync.Mutex
	m  map[string]int
	n  int
}

func (c *tally) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[kind]++
	c.n++
}

func emit(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

// common are the flags every probe takes.
type common struct {
	grpcAddr, httpAddr string
	duration           time.Duration
	n                  int
	model              string
}

func parse(name string, args []string) (*common, error) {
	c := &common{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.grpcAddr, "grpc", "", "the sidecar's gRPC address")
	fs.StringVar(&c.httpAddr, "http", "", "the sidecar's HTTP address")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long")
	fs.IntVar(&c.n, "n", 50, "connections of each kind")
	fs.StringVar(&c.model, "model", "fashion", "the model the well-behaved client calls")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.grpcAddr == "" || c.httpAddr == "" {
		return nil, errors.New("-grpc and -http are required")
	}
	return c, nil
}

// rawCodec sends and receives message bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

func init() { encoding.RegisterCodec(rawCodec{}) }

// dialGRPC returns a plain gRPC connection to addr.
func dialGRPC(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// invoke makes a unary call with a serialized request and returns its
// status code's name.
func invoke(ctx context.Context, conn *grpc.ClientConn, method string, req []byte, opts ...grpc.CallOption) string {
	var resp []byte
	err := conn.Invoke(ctx, method, &req, &resp, append(opts, grpc.ForceCodec(rawCodec{}))...)
	return status.Code(err).String()
}

// stringField serializes a message of one string field.
func stringField(num protowire.Number, s string) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// managementRequests are a request of each management call, each aimed at
// model (the unload would take it away): its gRPC message and its HTTP
// routes, the canonical one first.
func managementRequests(model string) map[string]struct {
	grpc []byte
	http []string
} {
	type r = struct {
		grpc []byte
		http []string
	}
	m := stringField(2, model) // RepositoryModel(Un)LoadRequest.model_name
	return map[string]r{
		"RepositoryIndex": {nil, []string{"POST /v2/repository/index"}},
		"RepositoryModelLoad": {m, []string{"POST /v2/repository/models/" + model + "/load",
			"POST //v2/repository/models/" + model + "/load", "POST /v2/Repository/Models/" + model + "/load"}},
		"RepositoryModelUnload": {m, []string{"POST /v2/repository/models/" + model + "/unload",
			"POST /v2/./repository/models/" + model + "/unload", "POST /v2/repository/models/%68ead_x/../" + model + "/unload"}},
		"SystemSharedMemoryStatus":     {nil, []string{"GET /v2/systemsharedmemory/status"}},
		"SystemSharedMemoryRegister":   {stringField(1, "r0"), []string{"POST /v2/systemsharedmemory/region/r0/register"}},
		"SystemSharedMemoryUnregister": {nil, []string{"POST /v2/systemsharedmemory/unregister"}},
		"CudaSharedMemoryStatus":       {nil, []string{"GET /v2/cudasharedmemory/status"}},
		"CudaSharedMemoryRegister":     {stringField(1, "r0"), []string{"POST /v2/cudasharedmemory/region/r0/register"}},
		"CudaSharedMemoryUnregister":   {nil, []string{"POST /v2/cudasharedmemory/unregister"}},
		"TraceSetting":                 {nil, []string{"POST /v2/trace/setting", "GET /v2/models/" + model + "/trace/setting"}},
		"LogSettings":                  {nil, []string{"POST /v2/logging", "GET /v2/logging"}},
	}
}

// management calls every management call over both protocols until the
// duration is over. "succeeded" counts the calls that were let through
// (any gRPC status but PERMISSION_DENIED and UNAUTHENTICATED, any HTTP
// status but 401 and 403).
func management(args []string) error {
	c, err := parse("management", args)
	if err != nil {
		return err
	}
	conn, err := dialGRPC(c.grpcAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	var answers tally
	succeeded := map[string]int{}
	reqs := managementRequests(c.model)
	calls := make([]string, 0, len(config.ManagementCalls))
	for _, mc := range config.ManagementCalls {
		calls = append(calls, mc.Name)
	}
	end := time.Now().Add(c.duration)
	for time.Now().Before(end) {
		for _, call := range calls {
			r := reqs[call]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			code := invoke(ctx, conn, "/inference.GRPCInferenceService/"+call, r.grpc)
			cancel()
			answers.add("grpc " + code)
			if code != "PermissionDenied" && code != "Unauthenticated" {
				succeeded["grpc "+call]++
			}
			for _, route := range r.http {
				method, path, _ := strings.Cut(route, " ")
				req, _ := http.NewRequest(method, "http://"+c.httpAddr+path, strings.NewReader("{}"))
				resp, err := client.Do(req)
				kind := "error"
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					kind = fmt.Sprint(resp.StatusCode)
				}
				answers.add("http " + kind)
				if kind != "403" && kind != "401" {
					succeeded["http "+route]++
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return emit(map[string]any{"probe": "management", "requests": answers.n, "answers": answers.m, "succeeded": succeeded})
}

// closing records how long connections of one kind lasted.
type closing struct {
	mu      sync.Mutex
	opened  int
	lasted  []float64 // seconds, of those the sidecar closed
	answers tally
}

func (k *closing) closed(d time.Duration, answer string) {
	k.mu.Lock()
	k.lasted = append(k.lasted, d.Seconds())
	k.mu.Unlock()
	k.answers.add(answer)
}

func (k *closing) summary() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := slices.Clone(k.lasted)
	slices.Sort(s)
	out := map[string]any{"opened": k.opened, "closed": len(s), "open_at_end": k.opened - len(s), "answers": k.answers.m}
	if len(s) > 0 {
		out["min_s"], out["p50_s"], out["max_s"] = s[0], s[len(s)/2], s[len(s)-1]
	}
	return out
}

// waitClosed reads c until the server closes it (or the deadline), and
// records how long it lasted from start, with the status line it got.
func waitClosed(c net.Conn, start time.Time, deadline time.Time, k *closing) {
	c.SetReadDeadline(deadline)
	buf, err := io.ReadAll(c)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return // still open at the end
	}
	answer := "closed"
	if line, _, ok := strings.Cut(string(buf), "\r\n"); ok && strings.HasPrefix(line, "HTTP/") {
		answer = line
	}
	k.closed(time.Since(start), answer)
}

// slow opens connections that never finish, n of each kind, and records
// when the sidecar ends each.
func slow(args []string) error {
	c, err := parse("slow", args)
	if err != nil {
		return err
	}
	kinds := map[string]*closing{}
	for _, name := range []string{"idle_tcp", "slow_headers", "slow_body", "keepalive_idle", "grpc_call_no_request", "grpc_conn_idle"} {
		kinds[name] = &closing{}
	}
	start := time.Now()
	deadline := start.Add(c.duration)
	var wg sync.WaitGroup
	dial := func(kind string, first string, drip string) {
		defer wg.Done()
		conn, err := net.Dial("tcp", c.httpAddr)
		if err != nil {
			kinds[kind].answers.add("dial error")
			return
		}
		defer conn.Close()
		kinds[kind].mu.Lock()
		kinds[kind].opened++
		kinds[kind].mu.Unlock()
		t0 := time.Now()
		io.WriteString(conn, first)
		if drip != "" {
			go func() {
				for time.Now().Before(deadline) {
					time.Sleep(time.Second)
					if _, err := io.WriteString(conn, drip); err != nil {
						return
					}
				}
			}()
		}
		waitClosed(conn, t0, deadline, kinds[kind])
	}
	keepalive := func() {
		defer wg.Done()
		conn, err := net.Dial("tcp", c.httpAddr)
		if err != nil {
			kinds["keepalive_idle"].answers.add("dial error")
			return
		}
		defer conn.Close()
		io.WriteString(conn, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufioReader(conn), nil)
		if err != nil {
			kinds["keepalive_idle"].answers.add("no answer")
			return
		}
		io.Copy(io.Discard, resp.Body)
		kinds["keepalive_idle"].mu.Lock()
		kinds["keepalive_idle"].opened++
		kinds["keepalive_idle"].mu.Unlock()
		waitClosed(conn, time.Now(), deadline, kinds["keepalive_idle"])
	}
	gconn, err := dialGRPC(c.grpcAddr)
	if err != nil {
		return err
	}
	defer gconn.Close()
	grpcCall := func() {
		defer wg.Done()
		k := kinds["grpc_call_no_request"]
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		cs, err := gconn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
			"/inference.GRPCInferenceService/ModelInfer", grpc.ForceCodec(rawCodec{}))
		if err != nil {
			k.answers.add("open " + status.Code(err).String())
			return
		}
		k.mu.Lock()
		k.opened++
		k.mu.Unlock()
		t0 := time.Now()
		var resp []byte
		err = cs.RecvMsg(&resp)
		if ctx.Err() != nil {
			return // still open at the end
		}
		k.closed(time.Since(t0), status.Code(err).String())
	}
	idleConn := func() {
		defer wg.Done()
		k := kinds["grpc_conn_idle"]
		conn, err := net.Dial("tcp", c.grpcAddr)
		if err != nil {
			k.answers.add("dial error")
			return
		}
		defer conn.Close()
		// The HTTP/2 preface and an empty SETTINGS frame: a connection
		// with no call. It ends when the sidecar sends GOAWAY (a client
		// then closes it and reconnects when it needs to) or closes it.
		io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		k.mu.Lock()
		k.opened++
		k.mu.Unlock()
		t0 := time.Now()
		conn.SetReadDeadline(deadline)
		br := bufio.NewReader(conn)
		var hdr [9]byte
		for {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					k.closed(time.Since(t0), "closed")
				}
				return
			}
			if _, err := io.CopyN(io.Discard, br, int64(hdr[0])<<16|int64(hdr[1])<<8|int64(hdr[2])); err != nil {
				return
			}
			if hdr[3] == 0x7 {
				k.closed(time.Since(t0), "GOAWAY")
				return
			}
		}
	}
	for range c.n {
		wg.Add(6)
		go dial("idle_tcp", "", "")
		go dial("slow_headers", "POST /v2/models/"+c.model+"/infer HTTP/1.1\r\nHost: x\r\nX-Slow: ", "a")
		go dial("slow_body", "POST /v2/models/"+c.model+"/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{", " ")
		go keepalive()
		go grpcCall()
		go idleConn()
	}
	wg.Wait()
	out := map[string]any{"probe": "slow", "requests": 0, "kinds": map[string]any{}}
	answers := map[string]int{}
	n := 0
	for name, k := range kinds {
		out["kinds"].(map[string]any)[name] = k.summary()
		for a, v := range k.answers.m {
			answers[name+" "+a] += v
		}
		n += k.opened
	}
	out["requests"], out["answers"] = n, answers
	return emit(out)
}

// headerSizes are the cookie sizes the headers probe sends, in bytes.
var headerSizes = []int{2 << 10, 6 << 10, 9 << 10, 12 << 10, 15 << 10, 20 << 10, 40 << 10}

// headers sends requests with headers of growing size, counting statuses
// by size, protocol and route.
func headers(args []string) error {
	c, err := parse("headers", args)
	if err != nil {
		return err
	}
	conn, err := dialGRPC(c.grpcAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	var answers tally
	infer := []byte(`{"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,28,28],"data":[` + strings.Repeat("0,", 783) + `0]}]}`)
	end := time.Now().Add(c.duration)
	for time.Now().Before(end) {
		for _, size := range headerSizes {
			cookie := strings.Repeat("c", size)
			label := fmt.Sprintf("%dKB", size>>10)
			for _, r := range []struct{ name, method, path string }{
				{"http-infer", http.MethodPost, "/v2/models/" + c.model + "/infer"},
				{"http-pass", http.MethodGet, "/v2/health/ready"},
			} {
				req, _ := http.NewRequest(r.method, "http://"+c.httpAddr+r.path, strings.NewReader(string(infer)))
				req.Header.Set("Cookie", cookie)
				resp, err := client.Do(req)
				kind := "error"
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					kind = fmt.Sprint(resp.StatusCode)
				}
				answers.add(label + " " + r.name + " " + kind)
			}
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "cookie", cookie), 10*time.Second)
			answers.add(label + " grpc-pass " + invoke(ctx, conn, "/inference.GRPCInferenceService/ServerLive", nil))
			cancel()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return emit(map[string]any{"probe": "headers", "requests": answers.n, "answers": answers.m})
}

// conns keeps n connections open to each listener, reopening those the
// sidecar closes, and counts the ones closed at once (under 50 ms: over
// the cap), those closed later (a connection that sends nothing is closed
// at read_header_timeout) and those held to the end.
func conns(args []string) error {
	c, err := parse("conns", args)
	if err != nil {
		return err
	}
	var answers tally
	end := time.Now().Add(c.duration)
	var wg sync.WaitGroup
	for _, l := range []struct{ name, addr string }{{"http", c.httpAddr}, {"grpc", c.grpcAddr}} {
		for range c.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					conn, err := net.Dial("tcp", l.addr)
					if err != nil {
						answers.add(l.name + " dial error")
						time.Sleep(50 * time.Millisecond)
						continue
					}
					t0 := time.Now()
					conn.SetReadDeadline(end)
					// Until the sidecar closes it (a gRPC server speaks
					// first: its SETTINGS frame is not an end).
					_, err = io.Copy(io.Discard, conn)
					conn.Close()
					switch {
					case errors.Is(err, os.ErrDeadlineExceeded):
						answers.add(l.name + " held to the end")
					case time.Since(t0) < 50*time.Millisecond:
						answers.add(l.name + " closed at once")
						time.Sleep(50 * time.Millisecond)
					default:
						answers.add(l.name + " closed later")
					}
				}
			}()
		}
	}
	wg.Wait()
	return emit(map[string]any{"probe": "conns", "requests": answers.n, "answers": answers.m})
}

// bufioReader wraps a connection for http.ReadResponse.
func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
