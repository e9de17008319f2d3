// Package metrics holds the sidecar's Prometheus metrics, every name
// prefixed react_, and the handler of its metrics listener (/metrics and
// the /healthz liveness probe).
//
// Metrics counts what the other parts of the sidecar report: requests for
// controllable models by model, protocol and the preference's source,
// their errors and the time of each pipeline stage (Served), requests
// refused before they reached Triton (Reject), reloads (Reloaded), the W_p
// cache's lookups, solves, evictions and shed solves (it is the cache's
// control.Observer and control.CacheObserver), the front door's
// connections, refused management calls, TLS certificate and readiness,
// and experiments' arms with their predictions. Labels take values only
// from bounded sets (configured names, protocols, status codes, fixed
// reasons), never from a raw preference or an experiment key. What is
// read at scrape time (the cache's size, the request bodies held) is
// watched through WatchCache and WatchBudget.
package metrics
