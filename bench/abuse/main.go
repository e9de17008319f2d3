// Command abuse is the hostile half of bench/abuse.sh: the probes of issue
// 22 (items 1 to 3) against a sidecar on loopback, and a watcher of the
// sidecar's CPU time, memory and state. Every mode is bounded in time; its
// result is one JSON line on stdout.
//
//	abuse flood  -addr HOST:PORT -model M -input NAME:D [-tasks 8] [-concurrency 8] [-duration 20s] [-deadline 0] [-keys 0]
//	abuse bodies -url URL [-inputs 50000] [-elements 1] [-outputs 0] [-concurrency 2] [-interval 0] [-duration 20s] [-hangup 0]
//	abuse watch  -pid PID [-metrics HOST:PORT] [-interval 200ms] -duration 30s
//	abuse spin   [-duration 20s] [-nice 19]
//	abuse membw  [-duration 20s] [-nice 19] [-mib 64]
//	abuse solves -components FILE [-rate 20] [-form] [-duration 20s] [-nice 10] [-seed 5]
//
// flood sends ModelInfer requests to a controllable model, each with a new
// random preference over tasks t0..t(N-1) in the react-preference
// metadata (three decimals per weight, so practically never twice the
// same), -concurrency at a time, each with a -deadline when it is
// positive, and an x-user-id of -keys distinct values (none when 0). It
// counts the answers by gRPC code. A worker whose request is refused
// (without a deadline of its own) pauses 10 ms, as bench/loadgen does.
//
// bodies sends HTTP inference bodies of -inputs FP32 inputs of -elements
// elements each, as JSON data, and -outputs requested outputs (about 55
// and 15 bytes each for one element), -concurrency at a time. With -hangup 0 it reads each answer and counts it by status; with
// a positive -hangup each client writes the whole request, waits -hangup
// and closes the connection without reading, as a client that gives up
// does.
//
// spin keeps one core busy at the lowest priority (nice 19), touching no
// memory and no server: it shows what any background work costs the
// well-behaved client on the machine, whatever the sidecar does.
//
// membw is spin's memory-bound twin: one core at nice 19 streaming over a
// buffer of -mib MiB of float64, larger than the last-level cache, summing
// it and writing one element in 64 per pass; it reports the read GB/s.
//
// solves runs the sidecar's own solve code for new preferences (react's
// Solver.Factor on the components file, and Factored.Form with -form), one
// at a time, at most -rate a second, random preferences as flood writes
// them, with every thread of the process at -nice: the cost of a flood's
// solves with no request handling. It reports the solves done, their rate
// and mean times, and the nice levels its threads had at the end. It
// links the linear algebra it is built with (go build -tags openblas, as
// the sidecar is).
//
// watch samples, every -interval until -duration, the process's CPU time
// (user + system, /proc/PID/stat) and resident memory (/proc/PID/status),
// and when -metrics is set the sidecar's go_goroutines,
// react_wp_solves_running, react_wp_solves_pending,
// react_inflight_request_bytes and go_memstats_heap_inuse_bytes, and the
// counts of its solves and formations of W_p so far
// (react_wp_solve_duration_seconds_count and
// react_wp_form_duration_seconds_count, summed over profiles); one JSON
// line per sample.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: abuse flood|bodies|watch|spin|membw|solves [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "flood":
		err = flood(os.Args[2:])
	case "bodies":
		err = bodies(os.Args[2:])
	case "watch":
		err = watch(os.Args[2:])
	case "spin":
		err = spin(os.Args[2:])
	case "membw":
		err = membw(os.Args[2:])
	case "solves":
		err = solves(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want flood, bodies, watch, spin, membw or solves", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}

// counts tallies answers by kind, safely.
type counts struct {
	mu sync.Mutex
	m  map[string]int
	n  int
}

func (c *counts) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[kind]++
	c.n++
}

func emit(v any) error {
	return json.NewEncoder(os.Stdout).Encode(v)
}

// flood runs the random-preference flood.
func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	addr := fs.String("addr", "", "sidecar gRPC address")
	model := fs.String("model", "", "controllable model")
	input := fs.String("input", "", "NAME:D, the FP32 input [1, D]")
	tasks := fs.Int("tasks", 8, "tasks t0..t(N-1)")
	conc := fs.Int("concurrency", 8, "requests at a time")
	dur := fs.Duration("duration", 20*time.Second, "how long")
	deadline := fs.Duration("deadline", 0, "each request's deadline; 0 for none")
	keys := fs.Int("keys", 0, "distinct x-user-id values; 0 sends none")
	seed := fs.Uint64("seed", 1, "random seed")
	prefs := fs.Int("prefs", 0, "distinct preferences, each worker cycling through them; 0 for a new one every request")
	interval := fs.Duration("interval", 0, "each worker starts a request at most this often; 0 at once after the last")
	if err := fs.Parse(args); err != nil {
		return err
	}
	name, d, err := parseInput(*input)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := tritonpb.NewGRPCInferenceServiceClient(conn)
	x := make([]byte, 4*d)
	rng := rand.New(rand.NewPCG(*seed, 7))
	for i := 0; i < d; i++ {
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(rng.Float64()*2-1)))
	}
	req := &tritonpb.ModelInferRequest{ModelName: *model,
		Inputs:           []*tritonpb.ModelInferRequest_InferInputTensor{{Name: name, Datatype: "FP32", Shape: []int64{1, int64(d)}}},
		RawInputContents: [][]byte{x}}
	var c counts
	var wg sync.WaitGroup
	end := time.Now().Add(*dur)
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(*seed, uint64(w)+100))
			for i, next := w, time.Now(); time.Now().Before(end); i++ {
				time.Sleep(time.Until(next))
				next = time.Now().Add(*interval)
				pr := r
				if *prefs > 0 {
					// The same few preferences for every worker: after
					// their first solves, all of them cached.
					pr = rand.New(rand.NewPCG(*seed, uint64(i%*prefs)))
				}
				weights := make([]string, *tasks)
				for t := range weights {
					weights[t] = fmt.Sprintf("t%d=%.3f", t, 0.001+pr.Float64())
				}
				md := metadata.Pairs("react-preference", strings.Join(weights, ","))
				if *keys > 0 {
					md.Set("x-user-id", fmt.Sprint("flood-", r.IntN(*keys)))
				}
				ctx := metadata.NewOutgoingContext(context.Background(), md)
				cancel := context.CancelFunc(func() {})
				if *deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, *deadline)
				}
				_, err := client.ModelInfer(ctx, req)
				cancel()
				c.add(status.Code(err).String())
				if err != nil && *deadline == 0 {
					// As bench/loadgen: a refused request pauses its worker
					// 10 ms, so that refusals are not a busy loop.
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return emit(map[string]any{"mode": "flood", "requests": c.n, "codes": c.m, "concurrency": *conc,
		"prefs": *prefs, "interval_ms": interval.Milliseconds(),
		"deadline_ms": deadline.Milliseconds(), "duration_s": dur.Seconds()})
}

func parseInput(s string) (string, int, error) {
	name, dim, ok := strings.Cut(s, ":")
	d, err := strconv.Atoi(dim)
	if !ok || err != nil || d < 1 || name == "" {
		return "", 0, fmt.Errorf("-input %q: want NAME:D", s)
	}
	return name, d, nil
}

// bodies sends large HTTP inference bodies.
func bodies(args []string) error {
	fs := flag.NewFlagSet("bodies", flag.ContinueOnError)
	target := fs.String("url", "", "http://HOST:PORT/v2/models/M/infer")
	inputs := fs.Int("inputs", 50000, "FP32 inputs")
	elements := fs.Int("elements", 1, "elements of each input, as JSON data")
	outputs := fs.Int("outputs", 0, "requested outputs")
	conc := fs.Int("concurrency", 2, "clients at a time")
	dur := fs.Duration("duration", 20*time.Second, "how long")
	hangup := fs.Duration("hangup", 0, "close this long after writing, without reading; 0 reads the answer")
	interval := fs.Duration("interval", 0, "each client starts a request at most this often; 0 at once after the last")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(`{"inputs":[`)
	for i := 0; i < *inputs; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"in%d","datatype":"FP32","shape":[%d],"data":[`, i, *elements)
		for e := 0; e < *elements; e++ {
			if e > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa((i + e) % 10))
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]`)
	if *outputs > 0 {
		b.WriteString(`,"outputs":[`)
		for i := 0; i < *outputs; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"out%d"}`, i)
		}
		b.WriteString(`]`)
	}
	b.WriteString(`}`)
	body := b.Bytes()
	var c counts
	var wg sync.WaitGroup
	end := time.Now().Add(*dur)
	client := &http.Client{Timeout: 2 * *dur}
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next := time.Now(); time.Now().Before(end); {
				time.Sleep(time.Until(next))
				next = time.Now().Add(*interval)
				if *hangup > 0 {
					c.add(hangUp(u, body, *hangup))
					continue
				}
				resp, err := client.Post(*target, "application/json", bytes.NewReader(body))
				if err != nil {
					c.add("error")
					time.Sleep(10 * time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				c.add(strconv.Itoa(resp.StatusCode))
			}
		}()
	}
	wg.Wait()
	return emit(map[string]any{"mode": "bodies", "requests": c.n, "answers": c.m, "body_bytes": len(body),
		"inputs": *inputs, "elements": *elements, "outputs": *outputs, "hangup_ms": hangup.Milliseconds(),
		"interval_ms": interval.Milliseconds(), "duration_s": dur.Seconds()})
}

// hangUp writes one request and closes the connection after d without
// reading the answer.
func hangUp(u *url.URL, body []byte, d time.Duration) string {
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		time.Sleep(10 * time.Millisecond)
		return "error"
	}
	defer conn.Close()
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, len(body))
	w.Write(body)
	if err := w.Flush(); err != nil {
		return "error"
	}
	time.Sleep(d)
	return "hung_up"
}

// watch samples a process and the sidecar's metrics.
func watch(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "process to watch")
	metrics := fs.String("metrics", "", "the sidecar's metrics listener, HOST:PORT")
	interval := fs.Duration("interval", 200*time.Millisecond, "between samples")
	dur := fs.Duration("duration", 30*time.Second, "how long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ticks := 100.0 // USER_HZ on Linux
	start := time.Now()
	for time.Since(start) <= *dur {
		cpu, rss, err := procSample(*pid)
		if err != nil {
			return err
		}
		sample := map[string]any{"t": time.Since(start).Seconds(), "cpu_s": cpu / ticks, "rss_bytes": rss}
		if *metrics != "" {
			for k, v := range scrapeGauges(*metrics) {
				sample[k] = v
			}
		}
		if err := emit(sample); err != nil {
			return err
		}
		time.Sleep(*interval)
	}
	return nil
}

// procSample reads a process's CPU ticks (user + system) and resident
// bytes.
func procSample(pid int) (float64, int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var rss int64
	for _, line := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			rss = kb << 10
		}
	}
	return utime + stime, rss, nil
}

// watched are the sidecar's metrics watch reads: gauges without labels,
// and counters summed over their labels (every profile), the solves and
// the formations of W_p done so far.
var (
	watched = []string{"go_goroutines", "react_wp_solves_running", "react_wp_solves_pending", "react_inflight_request_bytes", "go_memstats_heap_inuse_bytes"}
	summed  = []string{"react_wp_solve_duration_seconds_count", "react_wp_form_duration_seconds_count"}
)

// scrapeGauges reads the watched metrics; missing ones are left out.
func scrapeGauges(addr string) map[string]float64 {
	out := map[string]float64{}
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := parseSample(sc.Text())
		switch {
		case !ok:
		case slices.Contains(watched, name):
			out[name] = v
		case slices.Contains(summed, name):
			out[name] += v
		}
	}
	return out
}

// parseSample splits a line of the Prometheus text format into the
// metric's name (without its labels) and value; ok is false for comments
// and lines that are not a sample.
func parseSample(line string) (name string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return "", 0, false
	}
	name = line[:i]
	if j := strings.IndexByte(name, '{'); j >= 0 {
		name = name[:j]
	}
	return name, v, true
}
