package feedback

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestConcurrent records and joins from many goroutines at once, with a
// scraper reading the metrics meanwhile (run it with -race): every id is
// joined exactly once, whoever gets there first, and the counters add up.
func TestConcurrent(t *testing.T) {
	const workers, perWorker = 8, 500
	const ids = workers * perWorker
	w, err := NewWindow(Options{MaxEntries: ids})
	if err != nil {
		t.Fatal(err)
	}
	var joined [ids]atomic.Int32
	var duplicates, unknown atomic.Int64
	stop := make(chan struct{})
	var scrapes sync.WaitGroup
	scrapes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := testutilGather(w); err != nil {
				t.Error(err)
				return
			}
			_ = w.Len()
		}
	})
	var wg sync.WaitGroup
	join := func(i int) {
		_, err := w.Join("m", reward(fmt.Sprint(i), float64(i%5)/4))
		switch ReasonOf(err) {
		case 0:
			joined[i].Add(1)
		case Duplicate:
			duplicates.Add(1)
		case Unknown:
			unknown.Add(1)
		default:
			t.Errorf("id %d: %v", i, err)
		}
	}
	for g := range workers {
		wg.Go(func() { // the owner: records its ids, then joins each
			for k := range perWorker {
				i := g*perWorker + k
				if err := w.Record(fmt.Sprint(i), served([]string{"A", "B"}[i%2])); err != nil {
					t.Error(err)
				}
				join(i)
			}
		})
		wg.Go(func() { // a rival: joins the same ids, twice
			for k := range 2 * perWorker {
				join(g*perWorker + k/2)
			}
		})
	}
	wg.Wait()
	close(stop)
	scrapes.Wait()
	for i := range joined {
		if n := joined[i].Load(); n != 1 {
			t.Fatalf("id %d joined %d times", i, n)
		}
	}
	if d, u := duplicates.Load(), unknown.Load(); d+u != 2*ids {
		t.Errorf("%d duplicates and %d unknown for %d joins that lost", d, u, 2*ids)
	}
	mfs, err := testutilGather(w)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes, recorded, sum float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case MetricOutcomes:
				outcomes += m.GetCounter().GetValue()
			case MetricScore:
				sum += m.GetCounter().GetValue()
			case MetricRecorded:
				recorded += m.GetCounter().GetValue()
			}
		}
	}
	var want float64 // Σ (i mod 5)/4
	for i := range ids {
		want += float64(i%5) / 4
	}
	if outcomes != ids || recorded != ids || sum != want {
		t.Errorf("outcomes %v, recorded %v, score %v; want %d, %d, %v", outcomes, recorded, sum, ids, ids, want)
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d held", n)
	}
}

func testutilGather(c prometheus.Collector) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return reg.Gather()
}

// heapBytes returns the bytes the heap holds after a collection.
func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestMemoryBound records a million ids, long and short, with feedback
// for a third of them, into a window of 10,000: the heap it keeps stays
// within what 10,000 entries and 10,000 remembered ids take, whatever
// came through. A window that kept ids, or failed to evict, would hold
// hundreds of megabytes.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million ids")
	}
	const ids, max = 1_000_000, 10_000
	before := heapBytes()
	w, err := NewWindow(Options{MaxEntries: max})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	for i := range ids {
		id := fmt.Sprint(i)
		if i%2 == 0 {
			id += long
		}
		if err := w.Record(id, served("A")); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := w.Join("m", label(id, 3)); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := heapBytes() - before
	perEntry := float64(held) / max
	t.Logf("%d ids through a window of %d: %d held, %d remembered; the heap holds %d bytes more (%.0f a held entry with its remembered id)",
		ids, max, w.Len(), len(w.gone.index), held, perEntry)
	if n := w.Len(); n > max {
		t.Errorf("%d held, more than %d", n, max)
	}
	if n := len(w.index); n > max {
		t.Errorf("the index holds %d, more than %d", n, max)
	}
	if n := len(w.gone.index); n > max {
		t.Errorf("%d ids remembered, more than %d", n, max)
	}
	if perEntry > EntryBytes {
		t.Errorf("%.0f bytes an entry: more than EntryBytes, %d", perEntry, EntryBytes)
	}
	runtime.KeepAlive(w)
}

// BenchmarkRecordJoin records a request and joins the one recorded half a
// window before, in a full window of the default size.
func BenchmarkRecordJoin(b *testing.B) {
	w, err := NewWindow(Options{})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, DefaultMaxEntries)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", i)
	}
	s := served("A")
	for i := range DefaultMaxEntries {
		if err := w.Record(ids[i], s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := i % DefaultMaxEntries
		if err := w.Record(ids[k], s); err != nil {
			b.Fatal(err)
		}
		w.Join("m", label(ids[(k+DefaultMaxEntries/2)%DefaultMaxEntries], 3))
	}
}
