package control

import (
	"sync"
	"sync/atomic"
)

// specMemo remembers the Choice each preference spec a profile has parsed
// gave. ParseSpec is a pure function of the spec and the profile's tasks,
// and its parse, normalisation, rounding and canonical form cost more than
// a small batch's correction (BenchmarkExecuteManyPreferences), while
// clients tend to send the same few specs on every request. It holds at
// most specMemoSize specs of at most specMemoMaxLen bytes, and starts
// afresh when full, so no sequence of requests makes it grow beyond about
// a megabyte; a spec that fails to parse is never kept.
type specMemo struct {
	m sync.Map // spec → Choice
	n atomic.Int64
}

const (
	specMemoSize   = 4096
	specMemoMaxLen = 256
)

// get returns the Choice remembered for spec.
func (m *specMemo) get(spec string) (Choice, bool) {
	v, ok := m.m.Load(spec)
	if !ok {
		return Choice{}, false
	}
	return v.(Choice), true
}

// put remembers c for spec, unless spec is too long to keep.
func (m *specMemo) put(spec string, c Choice) {
	if len(spec) > specMemoMaxLen {
		return
	}
	if _, loaded := m.m.LoadOrStore(spec, c); loaded {
		return
	}
	if m.n.Add(1) > specMemoSize {
		m.m.Clear()
		m.n.Store(0)
	}
}

// len returns the number of specs remembered (for tests).
func (m *specMemo) len() int {
	n := 0
	m.m.Range(func(any, any) bool { n++; return true })
	return n
}
