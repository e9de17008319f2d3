package outcomes_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/outcomes"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// The tests run a whole sidecar (sidecartest.Harness) in front of the fake
// Triton, with an experiment "ab" over the models single (one head, task
// a) and multi (heads a, b, c): arm plain serves the merged backbone's
// answer, arm bheavy the preset b_first (a=0.2, b=0.8). Every expected
// arm comes from experiment.Split, every expected class from the head's
// logits computed in float64 (sidecartest.WantLogits), every expected
// count from what the test itself sent.

// abYAML is the experiment, with arm names plain and heavy (bheavy, or
// another name for a reload that renames it).
func abYAML(heavy string) string {
	return `experiments:
  - name: ab
    models: [single, multi]
    key: {header: x-user-id}
    arms:
      - {name: plain, weight: 1, preference: none}
      - {name: ` + heavy + `, weight: 1, preset: b_first}
`
}

// armWeights is what each arm applies, for the reference logits.
var armWeights = map[string][]float64{"plain": nil, "bheavy": {0.2, 0.8, 0}, "heavy": {0.2, 0.8, 0}}

// splitOf returns the arm of a key for arms plain and heavy, 1:1.
func splitOf(t *testing.T, heavy string) func(string) string {
	t.Helper()
	s, err := experiment.NewSplit("ab", []experiment.Arm{{Name: "plain", Weight: 1}, {Name: heavy, Weight: 1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return func(key string) string { return s.Arms()[s.Assign(key)].Name }
}

// clearRows returns n rows of x (3 values each) whose top-1 class under
// each arm is clear of the reference's tolerance, and those classes by
// arm.
func clearRows(t *testing.T, sc *faketriton.Scenario, seed uint64, n int) (rows [][]float64, class []map[string]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(rows) < n {
		x := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		classes := map[string]int{}
		clear := true
		for arm, w := range armWeights {
			want, tol := sidecartest.WantLogits(sc, "a", sidecartest.HeadDT["a"], w, x)
			if math.Abs(want[0]-want[1]) <= 10*(tol[0]+tol[1]) {
				clear = false
			}
			classes[arm] = 0
			if want[1] > want[0] {
				classes[arm] = 1
			}
		}
		if clear {
			rows, class = append(rows, x), append(class, classes)
		}
	}
	return rows, class
}

// served is what a client learnt of one request.
type served struct {
	arm, pref   string
	id          string // the id to report the outcome under
	assigned    string // react-request-id, parameter
	header      string // react-request-id, response header or gRPC header metadata
	responseID  string // the response's id field
	top1        int    // argmax of the served logits of output 0, -1 when not one row
	requestedID string // the request's own id
}

// inferGRPC sends a request of one or more rows x to model with key (""
// for none) and id ("" for none) over gRPC.
func inferGRPC(t *testing.T, h *sidecartest.Harness, model, key, id string, x []float64, md ...string) served {
	t.Helper()
	if key != "" {
		md = append(md, "x-user-id", key)
	}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(md...))
	var hdr metadata.MD
	resp, err := h.Client.ModelInfer(ctx, sidecartest.CtlRequest(model, id, x), grpc.Header(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetParameters()
	s := served{arm: p["react-arm"].GetStringParam(), pref: p["react-preference"].GetStringParam(),
		assigned: p[outcomes.KeyRequestID].GetStringParam(), responseID: resp.GetId(), top1: -1, requestedID: id}
	if v := hdr.Get(outcomes.KeyRequestID); len(v) > 0 {
		s.header = v[0]
	}
	if len(x) == 3 {
		logits, err := faketriton.Decode("FP32", resp.GetRawOutputContents()[0])
		if err != nil {
			t.Fatal(err)
		}
		s.top1 = argmax(logits)
	}
	s.id = id
	if id == "" {
		s.id = s.assigned
	}
	return s
}

// inferHTTP sends the same request as JSON over HTTP.
func inferHTTP(t *testing.T, h *sidecartest.Harness, model, key, id string, x []float64) served {
	t.Helper()
	body, hdr := sidecartest.InferBody(t, sidecartest.CtlRequest(model, id, x), false)
	if key != "" {
		hdr["x-user-id"] = key
	}
	resp, b := sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/"+model+"/infer", body, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP infer: %d %s", resp.StatusCode, b)
	}
	var r struct {
		ID         *string        `json:"id"`
		Parameters map[string]any `json:"parameters"`
		Outputs    []struct {
			Data []float64 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	s := served{top1: -1, requestedID: id, header: resp.Header.Get(outcomes.KeyRequestID)}
	s.arm, _ = r.Parameters["react-arm"].(string)
	s.pref, _ = r.Parameters["react-preference"].(string)
	s.assigned, _ = r.Parameters[outcomes.KeyRequestID].(string)
	if r.ID != nil {
		s.responseID = *r.ID
		if *r.ID == "" {
			t.Errorf("HTTP response with an empty id field: %s", b)
		}
	}
	if len(x) == 3 {
		s.top1 = argmax(r.Outputs[0].Data)
	}
	s.id = id
	if id == "" {
		s.id = s.assigned
	}
	return s
}

func argmax[T float32 | float64](v []T) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// checkID checks what a request served with an arm says of its id: its
// own echoed in the response's id and nothing added; or, without one,
// 128 random bits in hex in the react-request-id parameter and header,
// and no id field (as Triton answers a request without one).
func checkID(t *testing.T, what string, s served) {
	t.Helper()
	if s.requestedID != "" {
		if s.responseID != s.requestedID || s.assigned != "" || s.header != "" {
			t.Errorf("%s: with its own id %q: response id %q, react-request-id %q / header %q; want the id echoed and nothing added",
				what, s.requestedID, s.responseID, s.assigned, s.header)
		}
		return
	}
	if b, err := hex.DecodeString(s.assigned); err != nil || len(b) != 16 {
		t.Errorf("%s: react-request-id %q: want 32 hex digits", what, s.assigned)
	}
	if s.header != s.assigned || s.responseID != "" {
		t.Errorf("%s: react-request-id parameter %q, header %q, response id %q: want the header equal to the parameter and no id field",
			what, s.assigned, s.header, s.responseID)
	}
}

// client reports outcomes over both protocols.
type client struct {
	t    *testing.T
	h    *sidecartest.Harness
	grpc tritonpb.FeedbackClient
}

func newClient(t *testing.T, h *sidecartest.Harness) *client {
	return &client{t: t, h: h, grpc: tritonpb.NewFeedbackClient(sidecartest.Dial(t, h.Server.GRPCAddr().String()))}
}

// answer is a feedback's answer, from either protocol.
type answer struct {
	status int        // HTTP status
	code   codes.Code // gRPC code
	msg    string
	resp   feedback.Response
}

// label reports a true class (output "" for the only one).
func (c *client) label(protocol, model, id, output string, class int64) answer {
	if protocol == "grpc" {
		return c.callGRPC(&tritonpb.ModelFeedbackRequest{ModelName: model, Id: id, Output: output,
			Outcome: &tritonpb.ModelFeedbackRequest_Label{Label: class}})
	}
	body := map[string]any{"id": id, "label": class}
	if output != "" {
		body["output"] = output
	}
	return c.post(model, body)
}

// reward reports a reward.
func (c *client) reward(protocol, model, id string, r float64) answer {
	if protocol == "grpc" {
		return c.callGRPC(&tritonpb.ModelFeedbackRequest{ModelName: model, Id: id, Outcome: &tritonpb.ModelFeedbackRequest_Reward{Reward: r}})
	}
	return c.post(model, map[string]any{"id": id, "reward": r})
}

func (c *client) callGRPC(req *tritonpb.ModelFeedbackRequest) answer {
	c.t.Helper()
	resp, err := c.grpc.ModelFeedback(context.Background(), req)
	st := status.Convert(err)
	a := answer{code: st.Code(), msg: st.Message()}
	if err == nil {
		a.resp = feedback.Response{Model: resp.GetModelName(), ID: resp.GetId(), Experiment: resp.GetExperiment(), Arm: resp.GetArm(),
			Kind: resp.GetKind(), Task: resp.GetTask(), Score: resp.GetScore()}
	}
	return a
}

func (c *client) post(model string, body map[string]any) answer {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, out := sidecartest.HTTPDo(c.t, http.MethodPost, c.h.HTTPURL+"/v2/models/"+model+"/feedback", b, map[string]string{"Content-Type": "application/json"})
	a := answer{status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(out, &a.resp); err != nil {
			c.t.Fatalf("%v: %s", err, out)
		}
		return a
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		c.t.Fatalf("an error answer that is not Triton's JSON: %d %s", resp.StatusCode, out)
	}
	a.msg = e.Error
	return a
}

// ok reports whether a is a joined outcome.
func (a answer) ok() bool { return a.status == http.StatusOK || (a.status == 0 && a.code == codes.OK) }

// is reports whether a has the HTTP status or gRPC code of reason.
func (a answer) is(reason feedback.Reason) bool {
	want := map[feedback.Reason][2]any{
		feedback.Unknown:   {http.StatusNotFound, codes.NotFound},
		feedback.Expired:   {http.StatusNotFound, codes.NotFound},
		feedback.Duplicate: {http.StatusConflict, codes.AlreadyExists},
		feedback.Invalid:   {http.StatusBadRequest, codes.InvalidArgument},
	}[reason]
	if a.status != 0 {
		return a.status == want[0].(int)
	}
	return a.code == want[1].(codes.Code)
}

// value reads one series of the sidecar's metrics (0 when absent).
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	v, _ := sidecartest.MetricValue(fams, name, labels)
	return v
}

// exact returns the value of the series of name whose labels are exactly
// labels (MetricValue matches a subset), and whether there is one.
func exact(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				match = false
			}
		}
		if match {
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// tally is what the test sent, per arm.
type tally struct {
	recorded         int
	labels, matched  int
	rewards          int
	rewardSum, rsqrs float64
}

// TestFeedbackJoinsTheArm serves keyed one-row requests over both
// protocols, with and without ids of their own, reports each one's true
// label (or, for multi, a reward) over the other protocol in turn, and
// checks every answer and the per-arm counters against the arms, the
// float64 classes and the scores the test computed.
func TestFeedbackJoinsTheArm(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = abYAML("bheavy") })
	armOf := splitOf(t, "bheavy")
	c := newClient(t, h)
	const users = 40
	rows, classes := clearRows(t, h.Scenario, 3, users)
	want := map[string]*tally{"plain": {}, "bheavy": {}}
	ids := map[string]bool{}
	for i := range users {
		key := "user-" + strconv.Itoa(i)
		arm := armOf(key)
		protocol, other := "grpc", "http"
		infer := inferGRPC
		if i%2 == 1 {
			protocol, other = "http", "grpc"
			infer = func(t *testing.T, h *sidecartest.Harness, model, key, id string, x []float64, _ ...string) served {
				return inferHTTP(t, h, model, key, id, x)
			}
		}
		own := ""
		if i%4 < 2 {
			own = fmt.Sprintf("client-%d", i)
		}
		what := fmt.Sprintf("%s request of %s (id %q)", protocol, key, own)
		s := infer(t, h, "single", key, own, rows[i])
		if s.arm != arm {
			t.Fatalf("%s: arm %q, want %q", what, s.arm, arm)
		}
		checkID(t, what, s)
		if ids[s.id] {
			t.Errorf("%s: id %q given twice", what, s.id)
		}
		ids[s.id] = true
		class := classes[i][arm]
		if s.top1 != class {
			t.Errorf("%s: served top-1 %d, the float64 reference's %d", what, s.top1, class)
		}
		// Every third label is the predicted class; the others the other one.
		label := int64(class)
		if i%3 != 0 {
			label = int64(1 - class)
		}
		a := c.label(other, "single", s.id, "", label)
		score := 0.0
		if label == int64(class) {
			score = 1
		}
		wantResp := feedback.Response{Model: "single", ID: s.id, Experiment: "ab", Arm: arm, Kind: "label", Task: "a", Score: score}
		if !a.ok() || a.resp != wantResp {
			t.Errorf("%s, label %d over %s: %+v, want %+v", what, label, other, a, wantResp)
		}
		w := want[arm]
		w.recorded++
		w.labels++
		w.matched += int(score)
	}
	// multi: three heads, so a label must name its output; a reward is for
	// the whole request.
	for i := range 12 {
		key := "multi-user-" + strconv.Itoa(i)
		arm := armOf(key)
		s := inferGRPC(t, h, "multi", key, "", rows[i])
		checkID(t, "multi "+key, s)
		r := float64(i%5) / 4
		a := c.reward([]string{"grpc", "http"}[i%2], "multi", s.id, r)
		wantResp := feedback.Response{Model: "multi", ID: s.id, Experiment: "ab", Arm: arm, Kind: "reward", Score: r}
		if !a.ok() || a.resp != wantResp {
			t.Errorf("multi %s, reward %v: %+v, want %+v", key, r, a, wantResp)
		}
		want[arm].recorded++
		want[arm].rewards++
		want[arm].rewardSum += r
		want[arm].rsqrs += r * r
	}
	// A request that names its own preference gets no arm: not recorded,
	// no id added, and its outcome has nothing to join.
	s := inferGRPC(t, h, "single", "user-1", "", rows[0], "react-preference", "c=1")
	if s.arm != "" || s.assigned != "" || s.header != "" {
		t.Errorf("an override: arm %q, react-request-id %q / %q; want none", s.arm, s.assigned, s.header)
	}
	if a := c.label("http", "single", "client-0x", "", 0); !a.is(feedback.Unknown) || !strings.Contains(a.msg, "no request with id") {
		t.Errorf("an id never served with an arm: %+v, want 404, no request with that id", a)
	}

	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	for arm, w := range want {
		if w.recorded == 0 || w.labels == 0 || w.rewards == 0 {
			t.Fatalf("arm %s got %+v: the keys should reach both arms", arm, *w)
		}
		lbl := map[string]string{"model": "single", "experiment": "ab", "arm": arm, "kind": "label", "task": "a"}
		for name, v := range map[string]float64{
			feedback.MetricOutcomes: float64(w.labels), feedback.MetricScore: float64(w.matched), feedback.MetricScoreSquares: float64(w.matched),
		} {
			if got, ok := exact(fams, name, lbl); !ok || got != v {
				t.Errorf("%s%v = %v, want %v", name, lbl, got, v)
			}
		}
		rwd := map[string]string{"model": "multi", "experiment": "ab", "arm": arm, "kind": "reward", "task": ""}
		for name, v := range map[string]float64{
			feedback.MetricOutcomes: float64(w.rewards), feedback.MetricScore: w.rewardSum, feedback.MetricScoreSquares: w.rsqrs,
		} {
			if got, _ := exact(fams, name, rwd); math.Abs(got-v) > 1e-12 {
				t.Errorf("%s%v = %v, want %v", name, rwd, got, v)
			}
		}
		recorded := value(fams, feedback.MetricRecorded, map[string]string{"model": "single", "arm": arm}) +
			value(fams, feedback.MetricRecorded, map[string]string{"model": "multi", "arm": arm})
		if recorded != float64(w.recorded) {
			t.Errorf("%s{arm=%s} = %v, want %d", feedback.MetricRecorded, arm, recorded, w.recorded)
		}
	}
	if got := value(fams, feedback.MetricRejected, map[string]string{"reason": "unknown"}); got != 1 {
		t.Errorf("%s{reason=unknown} = %v, want 1", feedback.MetricRejected, got)
	}
	// Every outcome joined took its request out of the window.
	if got := value(fams, feedback.MetricEntries, nil); got != 0 {
		t.Errorf("%s = %v after every request got its outcome, want 0", feedback.MetricEntries, got)
	}
}

// TestFeedbackRejected: an unknown, duplicate, expired (by age, and pushed
// out by newer requests) and invalid outcome, over both protocols, each
// answered with its status and counted by reason; the window holds at most
// max_entries whatever passes through it.
func TestFeedbackRejected(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	const maxEntries = 5
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Experiments = abYAML("bheavy")
		c.Sections = fmt.Sprintf("feedback:\n  max_entries: %d\n  max_age: 1m\n", maxEntries)
		c.Clock = clock
	})
	c := newClient(t, h)
	rows, _ := clearRows(t, h.Scenario, 5, 1)
	sent := map[string]int{}
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			sA := inferGRPC(t, h, "single", "u1", "", rows[0])
			// Invalid: a class beyond the head's two, an output the request
			// does not have; the request stays joinable.
			if a := c.label(protocol, "single", sA.id, "", 2); !a.is(feedback.Invalid) {
				t.Errorf("label 2 of 2 classes: %+v, want invalid", a)
			}
			if a := c.label(protocol, "single", sA.id, "nope", 0); !a.is(feedback.Invalid) {
				t.Errorf("label of an unknown output: %+v, want invalid", a)
			}
			sent["invalid"] += 2
			if a := c.label(protocol, "single", sA.id, "", 1); !a.ok() {
				t.Errorf("a valid label after invalid ones: %+v", a)
			}
			// Duplicate.
			if a := c.label(protocol, "single", sA.id, "", 0); !a.is(feedback.Duplicate) {
				t.Errorf("a second label: %+v, want duplicate", a)
			}
			sent["duplicate"]++
			// Unknown: never served here, or served to another model.
			if a := c.reward(protocol, "single", "no-such-id", 0.5); !a.is(feedback.Unknown) {
				t.Errorf("an unknown id: %+v", a)
			}
			if a := c.reward(protocol, "multi", sA.id, 0.5); !a.is(feedback.Unknown) {
				t.Errorf("the id of single reported for multi: %+v", a)
			}
			sent["unknown"] += 2
			// Several rows: no single class to judge a label, a reward is
			// fine.
			sB := inferGRPC(t, h, "single", "u2", "rows-"+protocol, sidecartest.CtlBatch)
			if a := c.label(protocol, "single", sB.id, "", 0); !a.is(feedback.Invalid) || !strings.Contains(a.msg, "send a reward") {
				t.Errorf("a label for a request of four rows: %+v, want invalid, send a reward", a)
			}
			sent["invalid"]++
			if a := c.reward(protocol, "single", sB.id, 1); !a.ok() {
				t.Errorf("a reward for a request of four rows: %+v", a)
			}
			// Expired by age: joinable up to max_age, not after.
			sC := inferGRPC(t, h, "single", "u3", "", rows[0])
			sD := inferGRPC(t, h, "single", "u4", "", rows[0])
			advance(59 * time.Second)
			if a := c.reward(protocol, "single", sC.id, 0); !a.ok() {
				t.Errorf("a reward after 59s of 1m: %+v", a)
			}
			advance(2 * time.Second)
			if a := c.reward(protocol, "single", sD.id, 0); !a.is(feedback.Expired) || !strings.Contains(a.msg, "too late") {
				t.Errorf("a reward after 61s of 1m: %+v, want expired", a)
			}
			sent["expired"]++
			// Pushed out: max_entries newer requests recorded after it.
			first := inferGRPC(t, h, "single", "u5", "", rows[0])
			for i := range maxEntries {
				inferGRPC(t, h, "single", "u6-"+strconv.Itoa(i), "", rows[0])
			}
			if a := c.reward(protocol, "single", first.id, 0); !a.is(feedback.Expired) {
				t.Errorf("a reward after %d newer requests: %+v, want expired", maxEntries, a)
			}
			sent["expired"]++
			advance(2 * time.Minute) // the rest leaves the window
		})
	}
	// Under load: many requests, the window never holds more than
	// max_entries.
	for i := range 50 {
		inferGRPC(t, h, "single", "load-"+strconv.Itoa(i%7), "", rows[0])
		if i%10 == 9 {
			fams := sidecartest.Scrape(t, h.Metrics.Handler())
			if got := value(fams, feedback.MetricEntries, nil); got != maxEntries {
				t.Errorf("after %d requests: %s = %v, want %d", i+1, feedback.MetricEntries, got, maxEntries)
			}
		}
	}
	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	if got := value(fams, feedback.MetricCapacity, nil); got != maxEntries {
		t.Errorf("%s = %v, want %d", feedback.MetricCapacity, got, maxEntries)
	}
	for reason, n := range sent {
		got := 0.0
		for _, m := range fams[feedback.MetricRejected].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					got += m.GetCounter().GetValue()
				}
			}
		}
		if got != float64(n) {
			t.Errorf("%s{reason=%s} = %v, want %d", feedback.MetricRejected, reason, got, n)
		}
	}
}

// TestFeedbackHTTPRoute: what the route answers besides outcomes: other
// methods, a version, a body too large or compressed; none of it reaches
// Triton (the fake answers its own 404 for any route it does not serve).
func TestFeedbackHTTPRoute(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = abYAML("bheavy") })
	url := h.HTTPURL + "/v2/models/single/feedback"
	resp, b := sidecartest.HTTPDo(t, http.MethodGet, url, nil, nil)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET: %d, Allow %q: %s", resp.StatusCode, resp.Header.Get("Allow"), b)
	}
	resp, b = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/single/versions/1/feedback", []byte(`{"id":"x","reward":1}`), nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "without a version") {
		t.Errorf("a version: %d %s", resp.StatusCode, b)
	}
	big := []byte(`{"id":"x","reward":1,"pad":"` + strings.Repeat("p", feedback.MaxBodyBytes) + `"}`)
	resp, b = sidecartest.HTTPDo(t, http.MethodPost, url, big, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: %d %s", len(big), resp.StatusCode, b)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"id":"x","reward":1}`))
	zw.Close()
	resp, b = sidecartest.HTTPDo(t, http.MethodPost, url, gz.Bytes(), map[string]string{"Content-Encoding": "gzip"})
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a gzip body: %d %s", resp.StatusCode, b)
	}
	resp, b = sidecartest.HTTPDo(t, http.MethodPost, url, []byte(`{"id": 42, "label": 1, "reward": 2}`), nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "id") || !strings.Contains(string(b), "reward") {
		t.Errorf("a body with several problems: %d %s", resp.StatusCode, b)
	}
	// A model that is not controllable, or not there at all: its id is
	// unknown (the sidecar answers, not Triton).
	resp, b = sidecartest.HTTPDo(t, http.MethodPost, h.HTTPURL+"/v2/models/head_a/feedback", []byte(`{"id":"x","reward":1}`), nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "no request with id") {
		t.Errorf("a model of Triton's: %d %s", resp.StatusCode, b)
	}
}

// TestFeedbackDisabled: with feedback.enabled false nothing is recorded,
// no id is added, the endpoints say so (HTTP 501, gRPC UNIMPLEMENTED)
// without reaching Triton, and the window's metrics are not exported.
func TestFeedbackDisabled(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) {
		c.Experiments = abYAML("bheavy")
		c.Sections = "feedback:\n  enabled: false\n"
	})
	rows, _ := clearRows(t, h.Scenario, 7, 1)
	s := inferGRPC(t, h, "single", "u1", "", rows[0])
	if s.arm == "" || s.assigned != "" || s.header != "" {
		t.Errorf("feedback off: arm %q, react-request-id %q / %q; want an arm and no id", s.arm, s.assigned, s.header)
	}
	c := newClient(t, h)
	for _, p := range []string{"grpc", "http"} {
		a := c.reward(p, "single", "x", 1)
		if (p == "http" && a.status != http.StatusNotImplemented) || (p == "grpc" && a.code != codes.Unimplemented) ||
			!strings.Contains(a.msg, "feedback.enabled: false") {
			t.Errorf("%s, feedback off: %+v", p, a)
		}
	}
	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	for _, name := range []string{feedback.MetricCapacity, feedback.MetricEntries} {
		if fams[name] != nil {
			t.Errorf("%s exported with feedback off", name)
		}
	}
}

// TestFeedbackAcrossReload: the window outlives reloads. Requests served
// before a reload keep the arm that served them: their outcomes, reported
// after a reload that renames the arm, and after one that removes the
// experiment, are counted under the old arm's name; requests served after
// the rename are recorded under the new name; after the removal nothing
// is recorded. The counts are what the test sent, per arm name.
func TestFeedbackAcrossReload(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = abYAML("bheavy") })
	c := newClient(t, h)
	rows, classes := clearRows(t, h.Scenario, 9, 1)
	reload := func(experiments string) {
		t.Helper()
		cfg := h.Config
		cfg.Experiments = experiments
		sidecartest.WriteFile(t, h.ConfigPath, cfg.YAML())
		loaded, err := config.Load(h.ConfigPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Models.Reload(context.Background(), loaded); err != nil {
			t.Fatal(err)
		}
	}
	type req struct {
		s   served
		arm string
	}
	serve := func(prefix string, n int, armOf func(string) string) []req {
		var out []req
		for i := range n {
			key := prefix + strconv.Itoa(i)
			s := inferGRPC(t, h, "single", key, "", rows[0])
			if armOf != nil && s.arm != armOf(key) {
				t.Fatalf("%s: arm %q, want %q", key, s.arm, armOf(key))
			}
			out = append(out, req{s, s.arm})
		}
		return out
	}
	matched := map[string]float64{}
	joined := map[string]float64{}
	report := func(what string, rs []req) {
		t.Helper()
		for i, r := range rs {
			label := int64(classes[0][r.arm])
			if i%2 == 1 {
				label = 1 - label
			}
			a := c.label([]string{"http", "grpc"}[i%2], "single", r.s.id, "", label)
			if !a.ok() || a.resp.Arm != r.arm || a.resp.Experiment != "ab" {
				t.Errorf("%s: outcome of a request served with %s: %+v", what, r.arm, a)
			}
			joined[r.arm]++
			matched[r.arm] += float64(1 - i%2)
		}
	}
	before := serve("old-", 16, splitOf(t, "bheavy"))
	reload(abYAML("heavy")) // bheavy renamed heavy: the same stretch of keys
	entries := value(sidecartest.Scrape(t, h.Metrics.Handler()), feedback.MetricEntries, nil)
	if entries != 16 {
		t.Errorf("%s = %v after the reload, want the 16 requests held before it", feedback.MetricEntries, entries)
	}
	renamed := serve("old-", 16, splitOf(t, "heavy"))
	report("after the rename, for requests served before it", before[:8])
	reload("") // the experiment removed
	report("after the removal, for requests served before the rename", before[8:])
	report("after the removal, for requests served after the rename", renamed)
	after := serve("old-", 4, nil)
	for _, r := range after {
		if r.arm != "" || r.s.assigned != "" {
			t.Errorf("with the experiment removed: arm %q, react-request-id %q", r.arm, r.s.assigned)
		}
	}
	if joined["bheavy"] == 0 || joined["heavy"] == 0 || joined["plain"] == 0 {
		t.Fatalf("arms reached: %v", joined)
	}
	fams := sidecartest.Scrape(t, h.Metrics.Handler())
	for _, arm := range []string{"plain", "bheavy", "heavy"} {
		lbl := map[string]string{"model": "single", "experiment": "ab", "arm": arm, "kind": "label", "task": "a"}
		if got, _ := exact(fams, feedback.MetricOutcomes, lbl); got != joined[arm] {
			t.Errorf("%s{arm=%s} = %v, want %v", feedback.MetricOutcomes, arm, got, joined[arm])
		}
		if got, _ := exact(fams, feedback.MetricScore, lbl); got != matched[arm] {
			t.Errorf("%s{arm=%s} = %v, want %v", feedback.MetricScore, arm, got, matched[arm])
		}
	}
}

// TestFeedbackStream: requests of a ModelStreamInfer stream served with
// an arm are recorded too; one without an id gets react-request-id as a
// response parameter (a stream has one header for all its responses),
// and their outcomes join to their arms.
func TestFeedbackStream(t *testing.T) {
	h := sidecartest.StartHarness(t, func(c *sidecartest.CtlConfig) { c.Experiments = abYAML("bheavy") })
	armOf := splitOf(t, "bheavy")
	rows, classes := clearRows(t, h.Scenario, 11, 4)
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-user-id", "streamer"))
	stream, err := h.Client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	arm := armOf("streamer")
	c := newClient(t, h)
	for i, x := range rows {
		own := ""
		if i%2 == 0 {
			own = "stream-" + strconv.Itoa(i)
		}
		if err := stream.Send(sidecartest.CtlRequest("single", own, x)); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil || resp.GetErrorMessage() != "" {
			t.Fatalf("stream: %v, %v", resp, err)
		}
		r := resp.GetInferResponse()
		p := r.GetParameters()
		assigned := p[outcomes.KeyRequestID].GetStringParam()
		if p["react-arm"].GetStringParam() != arm || r.GetId() != own || (own == "") != (len(assigned) == 32) {
			t.Errorf("stream request %d (id %q): arm %q, id %q, react-request-id %q", i, own, p["react-arm"].GetStringParam(), r.GetId(), assigned)
		}
		id := own
		if id == "" {
			id = assigned
		}
		class := classes[i][arm]
		if a := c.label("grpc", "single", id, "", int64(class)); !a.ok() || a.resp.Arm != arm || a.resp.Score != 1 {
			t.Errorf("stream request %d: the outcome: %+v, want arm %s, score 1", i, a, arm)
		}
	}
	stream.CloseSend()
}
