package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mergectl/react-triton/control"
)

// TestCacheGauges: the cache's state at a scrape, the solvers' time left
// only where a share is set, debt included.
func TestCacheGauges(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   control.CacheStats
		want []string
		not  []string
	}{{
		name: "a share in debt",
		st: control.CacheStats{Pending: 2, Running: 1, SolveTime: -0.25, HasSolveShare: true,
			Partitions: []control.PartitionStats{{Name: "fashion", Entries: 3, Bytes: 4096}, {Name: "digits", Entries: 1, Bytes: 64}}},
		want: []string{
			"react_wp_cache_entries 4",
			`react_wp_cache_bytes{components="fashion"} 4096`,
			`react_wp_cache_bytes{components="digits"} 64`,
			"react_wp_solves_pending 2",
			"react_wp_solves_running 1",
			"react_wp_solve_time_left_seconds -0.25",
		},
	}, {
		name: "no share",
		st:   control.CacheStats{},
		want: []string{"react_wp_cache_entries 0", "react_wp_solves_pending 0"},
		not:  []string{"react_wp_solve_time_left_seconds"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.WatchCache(func() control.CacheStats { return tc.st })
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body := rec.Body.String()
			for _, w := range tc.want {
				if !strings.Contains(body, "\n"+w+"\n") {
					t.Errorf("no line %q in /metrics", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("/metrics has %s, want none", n)
				}
			}
			// Every metric collected is described: a pedantic registry
			// refuses one that is not.
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(&cacheCollector{stats: func() control.CacheStats { return tc.st }})
			if _, err := reg.Gather(); err != nil {
				t.Errorf("a pedantic registry: %v", err)
			}
		})
	}
}
