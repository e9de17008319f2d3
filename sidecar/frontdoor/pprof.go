package frontdoor

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
)

// PprofHandler serves Go's profiles under /debug/pprof/, for a listener of
// their own (pprof.listen). The CPU profile, the execution trace and the
// delta of a named profile (heap, allocs, ...) take a seconds parameter;
// one above maxSeconds (or not a positive integer) is
// refused with 400, so that one request cannot keep the profiler, and a
// goroutine, busy for hours.
func PprofHandler(maxSeconds int) http.Handler {
	bounded := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if s := r.FormValue("seconds"); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 || n > maxSeconds {
					http.Error(w, fmt.Sprintf("seconds=%q: want an integer from 1 to %d (pprof.max_seconds)", s, maxSeconds), http.StatusBadRequest)
					return
				}
			}
			h(w, r)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", bounded(pprof.Index)) // named profiles take seconds too (a delta)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", bounded(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", bounded(pprof.Trace))
	return mux
}
