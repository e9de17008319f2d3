package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// buildShadow builds cfg with shadow metrics, and closes the set when the
// test ends.
func (e *env) buildShadow(t *testing.T, cfg *config.Config) (*pipeline.Set, *pipeline.ShadowMetrics) {
	t.Helper()
	sm := pipeline.NewShadowMetrics()
	set, err := pipeline.Build(context.Background(), cfg, e.up, pipeline.Options{Cache: e.cache, Stats: e.stats, Shadow: sm})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(set.Close)
	return set, sm
}

// shadowConfig is experimentConfig with the shadow comparison s on.
func (e *env) shadowConfig(s config.Shadow) *config.Config {
	cfg := e.experimentConfig()
	cfg.Experiments[0].Shadow = s
	return cfg
}

// gather returns every sample of the metrics as a registry serves them, by
// name{label=value,...} (labels in the registry's order, by name); a
// histogram gives its count, under name_count{...}.
func gather(t testing.TB, sm *pipeline.ShadowMetrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := sm.Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name, v := mf.GetName(), 0.0
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				name, v = name+"_count", float64(m.GetHistogram().GetSampleCount())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// pairKeys are the keys gather gives the rows and agreements of a pair.
func pairKeys(model, arm, other, task string) (rows, agreements string) {
	l := fmt.Sprintf("{arm=%s,experiment=ab,model=%s,other=%s,task=%s}", arm, model, other, task)
	return shadowcmp.MetricRows + l, shadowcmp.MetricAgreements + l
}

// skipKey is the key gather gives the skips of a model for a reason.
func skipKey(model, reason string) string {
	return fmt.Sprintf("%s{experiment=ab,model=%s,reason=%s}", shadowcmp.MetricSkipped, model, reason)
}

// expKey is the key gather gives a metric of a model in experiment ab.
func expKey(metric, model string) string {
	return fmt.Sprintf("%s{experiment=ab,model=%s}", metric, model)
}

// compareMetrics reports every sample of got that differs from want, and
// every sample of want that got lacks.
func compareMetrics(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %v", k, v)
		}
	}
}

// armOf returns the arm of a result, "" for none (or no result).
func armOf(res *pipeline.Result) string {
	if res == nil {
		return ""
	}
	return res.Choice.Arm
}

// abSplit is the split of experimentConfig's experiment.
func abSplit(t *testing.T) *experiment.Split {
	t.Helper()
	split, err := experiment.NewSplit("ab", []experiment.Arm{{Name: "plain", Weight: 1}, {Name: "bheavy", Weight: 1}, {Name: "even3", Weight: 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return split
}

// keyOf returns a key that the split assigns to arm.
func keyOf(t *testing.T, split *experiment.Split, arm string) string {
	t.Helper()
	for i := range 1000 {
		k := "k" + strconv.Itoa(i)
		if split.Arms()[split.Assign(k)].Name == arm {
			return k
		}
	}
	t.Fatalf("no key for arm %s", arm)
	return ""
}

// top1Of returns the argmax of each row of an expectation's logits (k per
// row), computed in float64; ok is false when a row's two best logits are
// closer than their tolerances, where float32 arithmetic could pick either.
func top1Of(ex expectation, k int) (classes []int, ok bool) {
	rows := len(ex.logits) / k
	classes = make([]int, rows)
	for r := range rows {
		l, tol := ex.logits[r*k:(r+1)*k], ex.logitsTol[r*k:(r+1)*k]
		best := 0
		for c := range l {
			if l[c] > l[best] {
				best = c
			}
		}
		for c := range l {
			if c != best && l[best]-l[c] <= tol[best]+tol[c] {
				return nil, false
			}
		}
		classes[r] = best
	}
	return classes, true
}

// armClasses returns the top-1 class of each row of x under each arm (by
// name) for each task (task → rows), computed in float64 from each arm's
// W_p (the scenario's reference) with the heads taking the feature in
// headDT; ok is false when a row's top-1 is ambiguous under some arm.
func (e *env) armClasses(x []float64, tasks []string, headDT map[string]string) (classes map[string]map[string][]int, ok bool) {
	classes = map[string]map[string][]int{}
	for arm, weights := range armWeights {
		classes[arm] = map[string][]int{}
		var w [][]float64
		if weights != nil {
			w = e.sc.Reference(weights, e.sc.Beta, false)
		}
		for _, task := range tasks {
			if classes[arm][task], ok = top1Of(e.expect(task, "FP32", headDT[task], w, x), faketriton.HeadRows); !ok {
				return nil, false
			}
		}
	}
	return classes, true
}

// unambiguousBatch draws rows of x (row-major rows×3) from rng, leaving
// out every row whose top-1 class armClasses finds ambiguous.
func (e *env) unambiguousBatch(rng *rand.Rand, rows int, tasks []string, headDT map[string]string) []float64 {
	var x []float64
	for len(x) < 3*rows {
		row := []float64{4*rng.Float64() - 2, 4*rng.Float64() - 2, 4*rng.Float64() - 2}
		if _, ok := e.armClasses(row, tasks, headDT); ok {
			x = append(x, row...)
		}
	}
	return x
}

// TestShadowAgreement serves keys through each case's model with every
// request compared (fraction 1), and checks the rows and agreements
// counted per pair of arms and task against those computed here: each
// arm's W_p from the scenario's samples in float64 (not package react),
// applied to the backbone's feature, the fake head's linear map, and the
// argmax of both arms' logits, row by row.
func TestShadowAgreement(t *testing.T) {
	allArms := []string{"plain", "bheavy", "even3"}
	for _, tc := range []struct {
		name    string
		model   string
		outputs []string // asked for; none: all
		tasks   []string // the heads compared
		headDT  string   // heads b and c take the feature in it
	}{
		{name: "one head", model: "single", tasks: []string{"a"}, headDT: "FP32"},
		{name: "three heads", model: "multi", tasks: tasks, headDT: "FP32"},
		{name: "outputs asked for", model: "multi", outputs: []string{"logits_c", "logits_a"}, tasks: []string{"c", "a"}, headDT: "FP32"},
		{name: "FP16 heads", model: "multi", tasks: tasks, headDT: "FP16"},
		{name: "BF16 heads", model: "multi", tasks: []string{"b"}, outputs: []string{"logits_b"}, headDT: "BF16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := faketriton.NewScenario(7, 4, tasks...)
			e := newEnv(t, scenarioModels(sc, "FP32", tc.headDT)...)
			set, sm := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 1, MaxConcurrent: 1}))
			m := set.Models[tc.model]
			headDT := map[string]string{"a": "FP32", "b": tc.headDT, "c": tc.headDT}
			split := abSplit(t)
			rng := rand.New(rand.NewPCG(25, 3))
			want := map[string]float64{}
			requests := 0
			for i := range 30 {
				key := "user-" + strconv.Itoa(i)
				arm := split.Arms()[split.Assign(key)].Name
				x := e.unambiguousBatch(rng, 1+i%faketriton.MaxBatch, tc.tasks, headDT)
				res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest(tc.model, x, tc.outputs...), Header: control.Values{Key: key, HasKey: true}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Choice.Arm != arm {
					t.Fatalf("key %s: arm %q, want %s", key, res.Choice.Arm, arm)
				}
				set.WaitShadows() // one slot: the next request must find it free
				requests++
				classes, ok := e.armClasses(x, tc.tasks, headDT)
				if !ok {
					t.Fatal("an ambiguous row in an unambiguous batch")
				}
				for _, other := range allArms {
					if other == arm {
						continue
					}
					for _, task := range tc.tasks {
						rows, agreements := pairKeys(tc.model, arm, other, task)
						for r, c := range classes[arm][task] {
							want[rows]++
							if classes[other][task][r] == c {
								want[agreements]++
							}
						}
					}
				}
			}
			want[expKey(shadowcmp.MetricDuration+"_count", tc.model)] = float64(requests)
			want[expKey(shadowcmp.MetricInflight, tc.model)] = 0
			got := gather(t, sm)
			compareMetrics(t, got, want)

			// The test can fail: some pair disagrees on some rows, and
			// agrees on others.
			var disagree, agree bool
			for k, rows := range want {
				if strings.HasPrefix(k, shadowcmp.MetricRows) {
					a := want[strings.Replace(k, shadowcmp.MetricRows, shadowcmp.MetricAgreements, 1)]
					disagree = disagree || a < rows
					agree = agree || a > 0
				}
			}
			if !disagree || !agree {
				t.Errorf("the arms agree on all rows or none (%v): the comparison is not tested", want)
			}
		})
	}
}

// TestShadowOff: with fraction 0, or without metrics to count into, no
// request is compared: no head is called more than the client's requests
// call it, and no series is exported.
func TestShadowOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shadow  config.Shadow
		metrics bool
	}{
		{"fraction 0", config.Shadow{MaxConcurrent: 4}, true},
		{"no metrics", config.Shadow{Fraction: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			opt := pipeline.Options{Cache: e.cache, Stats: e.stats}
			var sm *pipeline.ShadowMetrics
			if tc.metrics {
				sm = pipeline.NewShadowMetrics()
				opt.Shadow = sm
			}
			set, err := pipeline.Build(context.Background(), e.shadowConfig(tc.shadow), e.up, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			const n = 12
			for i := range n {
				res, err := set.Models["multi"].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch), Header: control.Values{Key: strconv.Itoa(i), HasKey: true}})
				if err != nil || res.Choice.Arm == "" {
					t.Fatalf("Infer: arm %q, %v", res.Choice.Arm, err)
				}
			}
			set.WaitShadows()
			for _, h := range []string{"head_a", "head_b", "head_c"} {
				if got := e.fake.Calls(h); got != n {
					t.Errorf("%s called %d times for %d requests", h, got, n)
				}
			}
			if sm != nil {
				if got := gather(t, sm); len(got) != 0 {
					t.Errorf("metrics %v, want none", got)
				}
			}
		})
	}
}

// TestShadowDraw: with fraction 0.5, about half the requests are compared
// (400 requests: 200 ± 60 is 6 standard deviations), each in full.
func TestShadowDraw(t *testing.T) {
	e := newEnv(t)
	set, sm := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 0.5}))
	const n = 400
	x := batch[:3] // one row
	for range n {
		if _, err := set.Models["single"].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", x)}); err != nil {
			t.Fatal(err)
		}
		set.WaitShadows()
	}
	got := gather(t, sm)
	compared := got[expKey(shadowcmp.MetricDuration+"_count", "single")]
	if compared < n/2-60 || compared > n/2+60 {
		t.Errorf("%v of %d requests compared at fraction 0.5", compared, n)
	}
	// Each comparison calls head_a once per other arm: two.
	if calls := e.fake.Calls("head_a"); float64(calls) != n+2*compared {
		t.Errorf("head_a called %d times for %d requests and %v comparisons", calls, n, compared)
	}
	for k, v := range got {
		if strings.HasPrefix(k, shadowcmp.MetricSkipped) {
			t.Errorf("%s = %v: nothing should be skipped", k, v)
		}
	}
}

// gatedHead makes head_a of e's scenario hold, once armed, every call
// whose input is not the backbone's feature of x unchanged: in an
// experiment where the requests are served with arm plain (no
// correction), the shadow comparisons' calls and never the client's.
// release lets the held calls go on; it is also called when the test ends.
type gatedHead struct {
	mu    sync.Mutex
	plain []byte
	gate  chan struct{}
	held  int
}

func newGatedHead(t *testing.T, sc *faketriton.Scenario, x []float64) (*gatedHead, *faketriton.Model) {
	g := &gatedHead{plain: faketriton.Encode("FP32", sc.Feature("FP32", x)), gate: make(chan struct{})}
	h := sc.HeadModel("head_a", "a", "FP32")
	inner := h.Infer
	h.Infer = func(req *tritonpb.ModelInferRequest) (*tritonpb.ModelInferResponse, error) {
		if !bytes.Equal(req.GetRawInputContents()[0], g.plain) {
			g.mu.Lock()
			g.held++
			g.mu.Unlock()
			<-g.gate
		}
		return inner(req)
	}
	t.Cleanup(g.release)
	return g, h
}

func (g *gatedHead) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
}

// heldCalls returns how many calls reached the gate.
func (g *gatedHead) heldCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// gatedEnv is an env whose head_a is gated (newGatedHead) for the batch,
// with experiment ab over both models, every request drawn, at most two
// comparisons in flight, and the key of arm plain.
func gatedEnv(t *testing.T, s config.Shadow) (*env, *gatedHead, *pipeline.Set, *pipeline.ShadowMetrics, string) {
	sc := faketriton.NewScenario(7, 4, tasks...)
	models := scenarioModels(sc, "FP32", "FP32")
	g, h := newGatedHead(t, sc, batch)
	models[1] = h
	e := newEnv(t, models...)
	set, sm := e.buildShadow(t, e.shadowConfig(s))
	return e, g, set, sm, keyOf(t, abSplit(t), "plain")
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("waiting for %s: timed out", what)
		}
	}
}

// TestShadowCap: with max_concurrent 2, shared by the experiment's two
// models, the comparisons of the first two requests are held at Triton;
// the next requests are answered at once, not compared, and counted as
// busy; once the two finish, they are counted in full and the next
// request is compared again.
func TestShadowCap(t *testing.T) {
	e, g, set, sm, key := gatedEnv(t, config.Shadow{Fraction: 1, MaxConcurrent: 2})
	infer := func(model string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := set.Models[model].Infer(ctx, e.up, pipeline.Request{Proto: inferRequest(model, batch), Header: control.Values{Key: key, HasKey: true}})
		if err != nil || res.Choice.Arm != "plain" {
			t.Fatalf("%s: arm %q, %v (a client's request must not wait for the comparisons)", model, armOf(res), err)
		}
	}
	infer("single")
	infer("multi")
	waitFor(t, "two comparisons held", func() bool { return g.heldCalls() == 2 })
	for _, model := range []string{"single", "multi", "single", "single", "multi"} {
		infer(model)
	}
	got := gather(t, sm)
	compareMetrics(t, got, map[string]float64{
		skipKey("single", "busy"):                  3,
		skipKey("multi", "busy"):                   2,
		expKey(shadowcmp.MetricInflight, "single"): 1,
		expKey(shadowcmp.MetricInflight, "multi"):  1,
	})

	g.release()
	set.WaitShadows()
	infer("single")
	set.WaitShadows()
	rows := float64(len(batch) / 3)
	want := map[string]float64{
		skipKey("single", "busy"):                           3,
		skipKey("multi", "busy"):                            2,
		expKey(shadowcmp.MetricInflight, "single"):          0,
		expKey(shadowcmp.MetricInflight, "multi"):           0,
		expKey(shadowcmp.MetricDuration+"_count", "single"): 2,
		expKey(shadowcmp.MetricDuration+"_count", "multi"):  1,
	}
	for _, other := range []string{"bheavy", "even3"} {
		r, _ := pairKeys("single", "plain", other, "a")
		want[r] = 2 * rows
		for _, task := range tasks {
			r, _ := pairKeys("multi", "plain", other, task)
			want[r] = rows
		}
	}
	got = gather(t, sm)
	for k := range got {
		if strings.HasPrefix(k, shadowcmp.MetricAgreements) {
			delete(got, k) // TestShadowAgreement checks them
		}
	}
	compareMetrics(t, got, want)
}

// TestShadowClose: Close cancels the comparisons in flight, even while
// Triton holds their calls, and returns once they have ended; a request
// served after it starts none. Neither the request before nor the one
// after is affected.
func TestShadowClose(t *testing.T) {
	e, g, set, sm, key := gatedEnv(t, config.Shadow{Fraction: 1, MaxConcurrent: 2})
	req := func() pipeline.Request {
		return pipeline.Request{Proto: inferRequest("single", batch), Header: control.Values{Key: key, HasKey: true}}
	}
	for range 2 {
		if _, err := set.Models["single"].Infer(context.Background(), e.up, req()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two comparisons held", func() bool { return g.heldCalls() == 2 })
	closed := make(chan struct{})
	go func() {
		set.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while Triton held the comparisons' calls")
	}
	set.Close() // again: nothing more
	res, err := set.Models["single"].Infer(context.Background(), e.up, req())
	if err != nil || res.Response == nil {
		t.Fatalf("after Close: %v", err)
	}
	compareMetrics(t, gather(t, sm), map[string]float64{
		skipKey("single", "stopped"):               3,
		expKey(shadowcmp.MetricInflight, "single"): 0,
	})
	if got := g.heldCalls(); got != 2 {
		t.Errorf("%d calls reached the gate, want the two before Close", got)
	}
}

// TestShadowTimeout: a comparison whose head call takes longer than
// shadow.timeout is given up and counted as such; the client's request
// is not affected.
func TestShadowTimeout(t *testing.T) {
	e, g, set, sm, key := gatedEnv(t, config.Shadow{Fraction: 1, Timeout: 50 * time.Millisecond})
	if _, err := set.Models["multi"].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch), Header: control.Values{Key: key, HasKey: true}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	set.WaitShadows()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the comparison ended after %v, beyond its 50ms timeout", took)
	}
	compareMetrics(t, gather(t, sm), map[string]float64{
		skipKey("multi", "timeout"):               1,
		expKey(shadowcmp.MetricInflight, "multi"): 0,
	})
	if g.heldCalls() != 1 {
		t.Errorf("%d calls held, want the first other arm's", g.heldCalls())
	}
}

// TestShadowMetadata: the comparison's head calls carry the outgoing
// metadata of the client's calls (the forwarded authorization, trace
// context), though they outlive the client's context.
func TestShadowMetadata(t *testing.T) {
	e := newEnv(t)
	set, _ := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 1}))
	key := keyOf(t, abSplit(t), "even3")
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer t0ken"))
	if _, err := set.Models["single"].Infer(ctx, e.up, pipeline.Request{Proto: inferRequest("single", batch), Header: control.Values{Key: key, HasKey: true}}); err != nil {
		t.Fatal(err)
	}
	cancel() // the client has gone; its comparison goes on
	set.WaitShadows()
	if n := e.fake.Calls("head_a"); n != 3 {
		t.Fatalf("head_a called %d times, want the client's call and two comparisons", n)
	}
	if got := e.fake.LastMetadata("head_a").Get("authorization"); !slices.Equal(got, []string{"Bearer t0ken"}) {
		t.Errorf("the comparison's call carried authorization %q", got)
	}
}

// TestShadowResponseUnchanged: the client's response, as bytes, and its
// predictions are the same with the comparison on as off, for every arm;
// the request is not modified.
func TestShadowResponseUnchanged(t *testing.T) {
	e := newEnv(t)
	off := e.mustBuild(t, e.experimentConfig())
	on, sm := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 1}))
	marshal := proto.MarshalOptions{Deterministic: true}
	for _, arm := range []string{"plain", "bheavy", "even3"} {
		key := keyOf(t, abSplit(t), arm)
		var answers [][]byte
		var preds [][]pipeline.Prediction
		for _, set := range []*pipeline.Set{off, on} {
			req := inferRequest("multi", batch)
			before := proto.Clone(req)
			res, err := set.Models["multi"].Infer(context.Background(), e.up, pipeline.Request{Proto: req, Header: control.Values{Key: key, HasKey: true}})
			if err != nil {
				t.Fatal(err)
			}
			set.WaitShadows()
			if !proto.Equal(req, before) {
				t.Errorf("arm %s: the request was modified", arm)
			}
			b, err := marshal.Marshal(res.Response)
			if err != nil {
				t.Fatal(err)
			}
			answers, preds = append(answers, b), append(preds, res.Predictions)
		}
		if !bytes.Equal(answers[0], answers[1]) {
			t.Errorf("arm %s: the response differs with the comparison on", arm)
		}
		if fmt.Sprint(preds[0]) != fmt.Sprint(preds[1]) {
			t.Errorf("arm %s: predictions %v off, %v on", arm, preds[0], preds[1])
		}
	}
	got := gather(t, sm)
	if n := got[expKey(shadowcmp.MetricDuration+"_count", "multi")]; n != 3 {
		t.Errorf("%v comparisons, want 3: the comparison was not on", n)
	}
}

// TestShadowSkipped: what cannot be compared is counted, by reason: a
// graph-form model's requests, and a request whose outputs hold no
// logits, neither calling a head again; and an arm without a W_p, the
// other arms compared.
func TestShadowSkipped(t *testing.T) {
	t.Run("graph form", func(t *testing.T) {
		e := newGraphEnv(t)
		cfg := e.graphConfig()
		cfg.Experiments = e.shadowConfig(config.Shadow{Fraction: 1}).Experiments
		cfg.Experiments[0].Models = []string{"cls"}
		set, sm := e.buildShadow(t, cfg)
		const n = 6
		for i := range n {
			res, err := set.Models["cls"].Infer(context.Background(), e.up, pipeline.Request{Proto: graphRequest("cls", true, graphImages, graphMasks), Header: control.Values{Key: strconv.Itoa(i), HasKey: true}})
			if err != nil || res.Choice.Arm == "" {
				t.Fatalf("arm %q, %v", armOf(res), err)
			}
		}
		set.WaitShadows()
		compareMetrics(t, gather(t, sm), map[string]float64{skipKey("cls", "graph_form"): n})
		if calls := e.fake.Calls("head_a"); calls > n {
			t.Errorf("head_a called %d times for %d requests", calls, n)
		}
	})
	t.Run("an arm without W_p", func(t *testing.T) {
		e := newEnv(t)
		set, sm := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 1}))
		set.DropArmMatrix("single", "bheavy")
		key := keyOf(t, abSplit(t), "plain")
		if _, err := set.Models["single"].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("single", batch), Header: control.Values{Key: key, HasKey: true}}); err != nil {
			t.Fatal(err)
		}
		set.WaitShadows()
		got := gather(t, sm)
		rows, agreements := pairKeys("single", "plain", "even3", "a")
		delete(got, agreements) // TestShadowAgreement checks them
		compareMetrics(t, got, map[string]float64{
			rows:                           float64(len(batch) / 3),
			skipKey("single", "no_matrix"): 1,
			expKey(shadowcmp.MetricDuration+"_count", "single"): 1,
			expKey(shadowcmp.MetricInflight, "single"):          0,
		})
		if calls := e.fake.Calls("head_a"); calls != 2 {
			t.Errorf("head_a called %d times, want the client's call and even3's", calls)
		}
	})
	t.Run("no logits", func(t *testing.T) {
		sc := faketriton.NewScenario(7, 4, tasks...)
		index := faketriton.Func("head_index", faketriton.MaxBatch,
			[]faketriton.Tensor{{Name: "feature", Datatype: "FP32", Shape: []int64{-1, 4}}},
			[]faketriton.Tensor{{Name: "index", Datatype: "INT32", Shape: []int64{-1, 1}}},
			func(in map[string]triton.Tensor) (map[string]triton.Tensor, error) {
				rows := in["feature"].Shape[0]
				return map[string]triton.Tensor{"index": triton.NewInt32("index", []int64{rows, 1}, make([]int32, rows))}, nil
			})
		e := newEnv(t, append(scenarioModels(sc, "FP32", "FP32"), index)...)
		cfg := e.shadowConfig(config.Shadow{Fraction: 1})
		cfg.Models = append(cfg.Models, config.Model{Name: "indexed", Components: "zoo",
			Backbone: config.Backbone{Model: "backbone", Output: "feature"}, Heads: []config.Head{{Task: "a", Model: "head_index"}}})
		cfg.Experiments[0].Models = []string{"indexed"}
		set, sm := e.buildShadow(t, cfg)
		const n = 5
		for i := range n {
			if _, err := set.Models["indexed"].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("indexed", batch), Header: control.Values{Key: strconv.Itoa(i), HasKey: true}}); err != nil {
				t.Fatal(err)
			}
		}
		set.WaitShadows()
		compareMetrics(t, gather(t, sm), map[string]float64{skipKey("indexed", "no_prediction"): n})
		if calls := e.fake.Calls("head_index"); calls != n {
			t.Errorf("head_index called %d times for %d requests", calls, n)
		}
	})
}

// TestShadowRace runs requests of both models from several goroutines,
// every one drawn, with two slots, while the metrics are read; under -race
// it checks the comparisons' sharing. Every request drawn is either
// compared in full or skipped as busy.
func TestShadowRace(t *testing.T) {
	e := newEnv(t)
	set, sm := e.buildShadow(t, e.shadowConfig(config.Shadow{Fraction: 1, MaxConcurrent: 2}))
	const workers, each = 4, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				model := []string{"single", "multi"}[(w+i)%2]
				if _, err := set.Models[model].Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest(model, batch)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 5 {
		gather(t, sm)
	}
	wg.Wait()
	set.WaitShadows()
	got := gather(t, sm)
	total := 0.0
	for _, model := range []string{"single", "multi"} {
		total += got[expKey(shadowcmp.MetricDuration+"_count", model)] + got[skipKey(model, "busy")]
	}
	if total != workers*each {
		t.Errorf("%v requests compared or skipped as busy, want %d: %v", total, workers*each, got)
	}
}
