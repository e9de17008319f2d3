package livestats

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mergectl/react-triton/react"
)

// collect gathers s's metrics once, failing the test on an inconsistent
// collector.
func collect(t *testing.T, s *Sampler) {
	t.Helper()
	if _, err := testutil.CollectAndLint(s); err != nil {
		t.Error(err)
	}
}

func TestMetrics(t *testing.T) {
	const d = 3
	set := goodSettings(t.TempDir())
	set.Fraction, set.Holdout, set.MinSamples = 1, 0.5, 4
	s, err := New(set, d)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(reg); err == nil {
		t.Error("registered twice")
	}
	add := func(model string, n int) {
		x, _ := s.Admit(Request{Model: model})
		mtl, ind := make([]float32, n*d), make([]float32, n*d)
		for i := range mtl {
			mtl[i], ind[i] = float32(i%5)+1, float32(i%3)-1
		}
		if err := x.Add(mtl, ind); err != nil {
			t.Fatal(err)
		}
	}
	add("model_a", 3)
	s.Admit(Request{Model: "model_a", OptOut: true})
	s.Admit(Request{Model: "ensemble_a", Saturated: true})

	// Before any correction is watched: no staleness.
	want := `
# HELP react_sampling_requests_total Requests sampled for live calibration (their rows accumulated), by model and task.
# TYPE react_sampling_requests_total counter
react_sampling_requests_total{model="ensemble_a",task="a"} 0
react_sampling_requests_total{model="model_a",task="a"} 1
react_sampling_requests_total{model="model_b",task="b"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricRequests); err != nil {
		t.Error(err)
	}
	var b strings.Builder
	b.WriteString("# HELP " + MetricSkipped + " Requests to a sampled model not sampled, by model, task and reason: opt_out, fraction (not drawn), saturated, concurrency (max_concurrent in flight), failed (backbone or expert call), invalid (rows refused).\n")
	b.WriteString("# TYPE " + MetricSkipped + " counter\n")
	for _, m := range [][2]string{{"ensemble_a", "a"}, {"model_a", "a"}, {"model_b", "b"}} {
		for _, r := range []string{"concurrency", "failed", "fraction", "invalid", "opt_out", "saturated"} {
			v := "0"
			if m[0] == "model_a" && r == "opt_out" || m[0] == "ensemble_a" && r == "saturated" {
				v = "1"
			}
			fmt.Fprintf(&b, "%s{model=%q,reason=%q,task=%q} %s\n", MetricSkipped, m[0], r, m[1], v)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()), MetricSkipped); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(reg, MetricStaleness, MetricStalenessRecorded, MetricResidual); n != 0 {
		t.Errorf("%d staleness series before any correction is watched", n)
	}
	if n, _ := testutil.GatherAndCount(reg, MetricRows); n != 4 {
		t.Errorf("%s: %d series, want fit and heldout of 2 tasks", MetricRows, n)
	}

	// A correction watched: the identity, so the residual is z_mtl − z_ind.
	c := &react.Components{D: d, Beta: 1, Normalization: react.NormSum}
	acc := react.NewAccumulator(d)
	if err := acc.AddFloat32([]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	st, _ := acc.Stats("a", react.ModelRef{})
	st.ReconError = 0.125
	c.Tasks = []*react.TaskStats{st}
	if err := s.Watch(c, react.DefaultOptions(c)); err != nil {
		t.Fatal(err)
	}
	add("model_a", 3)
	if n, _ := testutil.GatherAndCount(reg, MetricStaleness); n != 0 {
		t.Error("staleness exported with 3 rows, below min_samples 4")
	}
	add("model_a", 2)
	live, _ := s.Staleness("a")
	want = `
# HELP react_staleness_recon_error Live relative reconstruction error of the task's own correction on the rows sampled since it was loaded (sum of squared residuals over sum of squared expert features), by task.
# TYPE react_staleness_recon_error gauge
react_staleness_recon_error{task="a"} ` + strconv.FormatFloat(live.Live, 'g', -1, 64) + `
# HELP react_staleness_recon_error_recorded The same relative reconstruction error on the calibration samples, recorded in the components file, by task.
# TYPE react_staleness_recon_error_recorded gauge
react_staleness_recon_error_recorded{task="a"} 0.125
# HELP react_staleness_rows Rows the live reconstruction error is over, by task.
# TYPE react_staleness_rows gauge
react_staleness_rows{task="a"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricStaleness, MetricStalenessRecorded, MetricStalenessRows); err != nil {
		t.Error(err)
	}
	// The identity's residual on the 5 rows of add, by hand: rows of 3
	// values, mtl (i%5)+1 and ind (i%3)-1 over i = 0..8 and 0..5.
	resid, target := 0.0, 0.0
	for _, n := range []int{3, 2} {
		for i := range n * d {
			m, y := float64(i%5+1), float64(i%3-1)
			resid += (m - y) * (m - y)
			target += y * y
		}
	}
	if live.Live != resid/target || live.Rows != 5 {
		t.Errorf("live error %v over %d rows, by hand %v over 5", live.Live, live.Rows, resid/target)
	}
	collect(t, s)
}
