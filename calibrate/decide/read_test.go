package decide

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/experiment/sequential"
	"github.com/mergectl/react-triton/problem"
)

// rewardSums returns the count, sum and sum of squares of the n rewards
// testdata/README.md gives arm X.
func rewardSums(arm string, n int) sequential.Sample {
	var s sequential.Sample
	for i := range n {
		r := float64((37*i+len(arm))%101) / 100
		if arm == "C" {
			r = math.Min(1, r+0.08)
		}
		s.N++
		s.Sum += r
		s.SumSq += r * r
	}
	return s
}

func near(a, b sequential.Sample) bool {
	return a.N == b.N && math.Abs(a.Sum-b.Sum) < 1e-9 && math.Abs(a.SumSq-b.SumSq) < 1e-9
}

// TestReadMetrics reads the recorded pages, from a file and over HTTP,
// and checks the sums against testdata/README.md's numbers.
func TestReadMetrics(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("testdata", "sidecar-0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || !strings.HasPrefix(r.Header.Get("Accept"), "text/plain") {
			http.Error(w, "want GET /metrics in text", http.StatusNotAcceptable)
			return
		}
		w.Write(page)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		sel  Selector
		want map[ArmKind]sequential.Sample
	}{
		{"labels", Selector{Experiment: "fashion-ab"}, map[ArmKind]sequential.Sample{
			{"merged", "label"}: {N: 610, Sum: 431, SumSq: 431}, {"react", "label"}: {N: 596, Sum: 459, SumSq: 459}}},
		{"labels of the model and task", Selector{Experiment: "fashion-ab", Model: "fashion_ab", Task: "fashion"}, map[ArmKind]sequential.Sample{
			{"merged", "label"}: {N: 610, Sum: 431, SumSq: 431}, {"react", "label"}: {N: 596, Sum: 459, SumSq: 459}}},
		{"another model", Selector{Experiment: "fashion-ab", Model: "home"}, map[ArmKind]sequential.Sample{}},
		{"another task", Selector{Experiment: "fashion-ab", Task: "mnist"}, map[ArmKind]sequential.Sample{}},
		{"rewards", Selector{Experiment: "homepage"}, map[ArmKind]sequential.Sample{
			{"A", "reward"}: rewardSums("A", 300), {"B", "reward"}: rewardSums("B", 290), {"C", "reward"}: rewardSums("C", 310)}},
	} {
		for _, src := range []string{filepath.Join("testdata", "sidecar-0.txt"), srv.URL + "/metrics"} {
			t.Run(tc.name+" from "+src, func(t *testing.T) {
				o, err := ReadMetrics(context.Background(), srv.Client(), src, tc.sel)
				if err != nil {
					t.Fatal(err)
				}
				if len(o.Samples) != len(tc.want) {
					t.Errorf("%d samples, want %d: %v", len(o.Samples), len(tc.want), o.Samples)
				}
				for ak, want := range tc.want {
					if got := o.Samples[ak]; !near(got, want) {
						t.Errorf("%v: %+v, want %+v", ak, got, want)
					}
				}
				if !o.Experiments["fashion-ab"] || !o.Experiments["homepage"] || len(o.Experiments) != 2 {
					t.Errorf("experiments %v", o.Experiments)
				}
			})
		}
	}
}

// TestMerge sums two replicas' pages.
func TestMerge(t *testing.T) {
	all := NewOutcomes()
	for _, page := range []string{"sidecar-0.txt", "sidecar-1.txt"} {
		o, err := ReadMetrics(context.Background(), http.DefaultClient, filepath.Join("testdata", page), Selector{Experiment: "homepage"})
		if err != nil {
			t.Fatal(err)
		}
		all.Merge(o)
	}
	// The second replica's rewards are its own first ones.
	add := func(a, b sequential.Sample) sequential.Sample {
		return sequential.Sample{N: a.N + b.N, Sum: a.Sum + b.Sum, SumSq: a.SumSq + b.SumSq}
	}
	for arm, n := range map[string][2]int{"A": {300, 10}, "B": {290, 12}, "C": {310, 9}} {
		if got, want := all.Samples[ArmKind{arm, "reward"}], add(rewardSums(arm, n[0]), rewardSums(arm, n[1])); !near(got, want) {
			t.Errorf("arm %s: %+v, want %+v", arm, got, want)
		}
	}
}

// closedURL returns an address where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestReadMetricsProblems: each problem of a source, named by it.
func TestReadMetricsProblems(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	down := closedURL(t)
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{write("malformed.txt", "# TYPE react_experiment_outcomes_total counter\nreact_experiment_outcomes_total{arm=\"A\" 3\n"),
			[]string{"not a metrics page in Prometheus' text format: line 2:"}},
		{write("gauge.txt", "# TYPE react_experiment_outcomes_total gauge\nreact_experiment_outcomes_total{arm=\"A\",experiment=\"e\",kind=\"label\"} 3\n"),
			[]string{"react_experiment_outcomes_total is a gauge: want a counter"}},
		{write("negative.txt", "react_experiment_outcome_score_total{arm=\"A\",experiment=\"e\",kind=\"label\"} -1\nreact_experiment_outcomes_total{arm=\"A\",experiment=\"e\",kind=\"label\"} NaN\n"),
			[]string{`react_experiment_outcome_score_total{arm="A",experiment="e",kind="label"} is -1: a counter is a number ≥ 0`,
				`react_experiment_outcomes_total{arm="A",experiment="e",kind="label"} is NaN`}},
		{filepath.Join(dir, "absent.txt"), []string{"no such file"}},
		{srv.URL + "/metrics", []string{"HTTP 404 Not Found"}},
		{down + "/metrics", []string{"unreachable: dial tcp"}},
	} {
		t.Run(filepath.Base(tc.src), func(t *testing.T) {
			_, err := ReadMetrics(context.Background(), http.DefaultClient, tc.src, Selector{Experiment: "e"})
			var p problem.List
			if !errors.As(err, &p) || len(p) != len(tc.want) {
				t.Fatalf("%v: want %d problems", err, len(tc.want))
			}
			for i, q := range p {
				if q.Path != tc.src || !strings.Contains(q.Msg, tc.want[i]) {
					t.Errorf("problem %q, want it at %s with %q", q, tc.src, tc.want[i])
				}
			}
		})
	}
}
