package shadowcmp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/pipeline/shadowcmp"
)

// samples returns every sample of m as a registry serves it, by
// name{label=value,...}; a histogram gives its count, as name_count{...}.
func samples(t *testing.T, m *shadowcmp.Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(reg); err == nil || !strings.HasPrefix(err.Error(), "shadowcmp: registering the metrics: ") {
		t.Errorf("registering twice: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name, v := mf.GetName(), 0.0
			switch {
			case s.GetCounter() != nil:
				v = s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				v = s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				name, v = name+"_count", float64(s.GetHistogram().GetSampleCount())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

const (
	rowsA     = shadowcmp.MetricRows + "{arm=a,experiment=e,model=m,other=b,task=t}"
	agreedA   = shadowcmp.MetricAgreements + "{arm=a,experiment=e,model=m,other=b,task=t}"
	inflight  = shadowcmp.MetricInflight + "{experiment=e,model=m}"
	completed = shadowcmp.MetricDuration + "_count{experiment=e,model=m}"
)

func skipped(reason string) string {
	return shadowcmp.MetricSkipped + "{experiment=e,model=m,reason=" + reason + "}"
}

// TestOutcomes: each way a comparison ends is counted as such, and only
// so.
func TestOutcomes(t *testing.T) {
	counts := []shadowcmp.Count{{Other: "b", Task: "t", Rows: 5, Agreed: 3}}
	for _, tc := range []struct {
		name    string
		compare shadowcmp.Compare
		want    map[string]float64
	}{
		{"in full", func(context.Context) ([]shadowcmp.Count, bool, error) { return counts, false, nil },
			map[string]float64{rowsA: 5, agreedA: 3, completed: 1, inflight: 0}},
		{"an arm without W_p", func(context.Context) ([]shadowcmp.Count, bool, error) { return counts, true, nil },
			map[string]float64{rowsA: 5, agreedA: 3, completed: 1, inflight: 0, skipped("no_matrix"): 1}},
		{"failed", func(context.Context) ([]shadowcmp.Count, bool, error) { return nil, false, errors.New("head failed") },
			map[string]float64{inflight: 0, skipped("error"): 1}},
		{"past its timeout", func(ctx context.Context) ([]shadowcmp.Count, bool, error) {
			<-ctx.Done()
			return counts, false, ctx.Err()
		}, map[string]float64{inflight: 0, skipped("timeout"): 1}},
		// gRPC fails a call whose deadline has passed before the
		// context's own timer has fired: the comparison's timeout too.
		{"gRPC reports the deadline first", func(context.Context) ([]shadowcmp.Count, bool, error) {
			return nil, false, fmt.Errorf("head_a: %w", status.Error(codes.DeadlineExceeded, "deadline exceeded"))
		}, map[string]float64{inflight: 0, skipped("timeout"): 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := shadowcmp.NewMetrics()
			run := shadowcmp.NewRun()
			defer run.Close()
			c := shadowcmp.NewComparer(run, m, "e", config.Shadow{Fraction: 1, Timeout: 20 * time.Millisecond})
			if !c.Start("m", "a", tc.compare) {
				t.Fatal("not started")
			}
			run.Wait()
			check(t, samples(t, m), tc.want)
		})
	}
}

func check(t *testing.T, got, want map[string]float64) {
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

// TestCapAndClose: at most max_concurrent comparisons run at once, the
// others are counted busy; Close cancels those running and waits for
// them, a comparison that finished first is counted in full, and none
// starts after.
func TestCapAndClose(t *testing.T) {
	m := shadowcmp.NewMetrics()
	run := shadowcmp.NewRun()
	c := shadowcmp.NewComparer(run, m, "e", config.Shadow{Fraction: 1, MaxConcurrent: 2, Timeout: time.Minute})
	started := make(chan struct{}, 2)
	held := func(ctx context.Context) ([]shadowcmp.Count, bool, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, false, ctx.Err()
	}
	for range 2 {
		if !c.Start("m", "a", held) {
			t.Fatal("a free slot refused")
		}
	}
	<-started
	<-started
	for range 3 {
		if c.Start("m", "a", held) {
			t.Fatal("started beyond max_concurrent")
		}
	}
	check(t, samples(t, m), map[string]float64{inflight: 2, skipped("busy"): 3})

	done := make(chan struct{})
	go func() { run.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	run.Close()
	if c.Start("m", "a", held) {
		t.Fatal("started after Close")
	}
	check(t, samples(t, m), map[string]float64{inflight: 0, skipped("busy"): 3, skipped("stopped"): 3})

	// A comparison that finished is counted in full, though the run was
	// closed before it returned.
	run2 := shadowcmp.NewRun()
	c2 := shadowcmp.NewComparer(run2, m, "e", config.Shadow{Fraction: 1})
	c2.Start("m", "a", func(ctx context.Context) ([]shadowcmp.Count, bool, error) {
		go run2.Close()
		<-ctx.Done()
		return []shadowcmp.Count{{Other: "b", Task: "t", Rows: 2, Agreed: 2}}, false, nil
	})
	run2.Close()
	got := samples(t, m)
	if got[rowsA] != 2 || got[agreedA] != 2 {
		t.Errorf("a comparison that finished: rows %v, agreed %v, want 2, 2", got[rowsA], got[agreedA])
	}
}

// TestStartAfterClose: a Start refused because the run is closed gives
// its slot back: with one slot, each of three is counted stopped, none
// busy.
func TestStartAfterClose(t *testing.T) {
	m := shadowcmp.NewMetrics()
	run := shadowcmp.NewRun()
	c := shadowcmp.NewComparer(run, m, "e", config.Shadow{Fraction: 1, MaxConcurrent: 1})
	run.Close()
	for range 3 {
		if c.Start("m", "a", func(context.Context) ([]shadowcmp.Count, bool, error) { return nil, false, nil }) {
			t.Fatal("started after Close")
		}
	}
	check(t, samples(t, m), map[string]float64{skipped("stopped"): 3})
}

// TestDraw: fraction 0 never draws, 1 always, 0.25 about a quarter
// (10,000 draws: 2,500 ± 260 is 6 standard deviations).
func TestDraw(t *testing.T) {
	run := shadowcmp.NewRun()
	defer run.Close()
	for _, tc := range []struct {
		fraction float64
		lo, hi   int
	}{{0, 0, 0}, {1, 10000, 10000}, {0.25, 2240, 2760}} {
		c := shadowcmp.NewComparer(run, shadowcmp.NewMetrics(), "e", config.Shadow{Fraction: tc.fraction})
		n := 0
		for range 10000 {
			if c.Draw() {
				n++
			}
		}
		if n < tc.lo || n > tc.hi {
			t.Errorf("fraction %v: %d of 10000 drawn, want %d to %d", tc.fraction, n, tc.lo, tc.hi)
		}
	}
}

// TestAgreement counts the rows whose classes are equal, and refuses
// classes for fewer rows or more.
func TestAgreement(t *testing.T) {
	c, err := shadowcmp.Agreement("b", "t", []int{0, 1, 2, 2, 0}, []int{0, 2, 2, 1, 0})
	if want := (shadowcmp.Count{Other: "b", Task: "t", Rows: 5, Agreed: 3}); err != nil || c != want {
		t.Errorf("Agreement: %+v, %v, want %+v", c, err, want)
	}
	for _, tc := range []struct {
		served, got []int
		want        string
	}{
		{[]int{0, 1}, []int{0}, "1 rows, 2 served"},
		{[]int{0}, []int{0, 1}, "2 rows, 1 served"},
	} {
		if _, err := shadowcmp.Agreement("b", "t", tc.served, tc.got); err == nil || err.Error() != tc.want {
			t.Errorf("%d rows for %d: %v, want %s", len(tc.got), len(tc.served), err, tc.want)
		}
	}
}
