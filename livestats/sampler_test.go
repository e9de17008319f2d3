package livestats

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/partialfile"
)

// rows returns n paired float32 rows of width d, ind = M mtl + noise.
func rows(rng *rand.Rand, n, d int) (mtl, ind []float32) {
	m := make([]float64, d*d)
	for i := range m {
		m[i] = rng.NormFloat64() / math.Sqrt(float64(d))
	}
	mtl, ind = make([]float32, n*d), make([]float32, n*d)
	for r := range n {
		for j := range d {
			mtl[r*d+j] = float32(rng.NormFloat64())
		}
		for i := range d {
			v := 0.3 * rng.NormFloat64()
			for j := range d {
				v += m[i*d+j] * float64(mtl[r*d+j])
			}
			ind[r*d+i] = float32(v)
		}
	}
	return mtl, ind
}

// direct holds sums computed by plain float64 loops over rows.
type direct struct {
	n     int64
	s, g  []float64 // D×D, full
	yy    float64
	d     int
	which []int // the rows summed
}

func sumRows(mtl, ind []float32, d int, keep func(r int) bool) direct {
	out := direct{s: make([]float64, d*d), g: make([]float64, d*d), d: d}
	for r := range len(mtl) / d {
		if keep != nil && !keep(r) {
			continue
		}
		out.n++
		out.which = append(out.which, r)
		for i := range d {
			y := float64(ind[r*d+i])
			out.yy += y * y
			for j := range d {
				out.s[i*d+j] += y * float64(mtl[r*d+j])
				out.g[i*d+j] += float64(mtl[r*d+i]) * float64(mtl[r*d+j])
			}
		}
	}
	return out
}

// checkSums compares an accumulator with direct sums, within rel relative
// to the largest entry.
func checkSums(t *testing.T, what string, a *react.Accumulator, want direct, rel float64) {
	t.Helper()
	n, s, g := a.State()
	yy, ok := a.SumSquares()
	if n != want.n || !ok {
		t.Fatalf("%s: N = %d (sum of squares known %v), want %d", what, n, ok, want.n)
	}
	scale := 0.0
	for _, v := range want.s {
		scale = max(scale, math.Abs(v))
	}
	for _, v := range want.g {
		scale = max(scale, math.Abs(v))
	}
	d := want.d
	for i := range d {
		for j := range d {
			if math.Abs(s[i*d+j]-want.s[i*d+j]) > rel*scale {
				t.Fatalf("%s: S[%d][%d] = %v, rows give %v", what, i, j, s[i*d+j], want.s[i*d+j])
			}
			if j >= i && math.Abs(g[i*d+j]-want.g[i*d+j]) > rel*scale {
				t.Fatalf("%s: G[%d][%d] = %v, rows give %v", what, i, j, g[i*d+j], want.g[i*d+j])
			}
		}
	}
	if math.Abs(yy-want.yy) > rel*want.yy {
		t.Fatalf("%s: Σ‖z_ind‖² = %v, rows give %v", what, yy, want.yy)
	}
}

// splitmix64 is the reference SplitMix64 output function (Steele, Lea and
// Flood 2014), written out here apart from the package's mix.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// TestSamplerSums adds rows in batches of varying size and checks the
// file's sums, and the held-out sums, against plain loops over the rows:
// the held-out rows are those the documented rule picks (a hash of the
// task's row counter under the share).
func TestSamplerSums(t *testing.T) {
	const d, n = 6, 257
	set := goodSettings(t.TempDir())
	set.Fraction, set.Holdout = 1, 0.25
	s, err := New(set, d)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mtl, ind := rows(rng, n, d)
	for r := 0; r < n; {
		b := min(1+rng.IntN(9), n-r)
		x, reason := s.Admit(Request{Model: "model_a"})
		if x == nil {
			t.Fatalf("not admitted: %v", reason)
		}
		if err := x.Add(mtl[r*d:(r+b)*d], ind[r*d:(r+b)*d]); err != nil {
			t.Fatal(err)
		}
		r += b
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := partialfile.Load(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tasks) != 1 || f.Tasks[0].Name != "a" || f.Replica != "sidecar-0" || f.Run != Run || f.D != d ||
		f.Beta != DefaultBeta || f.Normalization != react.NormSum || f.Backbone != set.Backbone || f.Tasks[0].Expert != set.Tasks[0].Expert {
		t.Fatalf("file: %+v", f)
	}
	checkSums(t, "every row", f.Tasks[0].Acc, sumRows(mtl, ind, d, nil), 1e-12)

	h := fnvTask("a")
	held := sumRows(mtl, ind, d, func(r int) bool { return float64(splitmix64(h+uint64(r))) < 0.25*math.Pow(2, 64) })
	if held.n < n/8 || held.n > n*3/8 {
		t.Errorf("%d rows of %d held out, want about a quarter", held.n, n)
	}
	checkSums(t, "held-out rows", f.Tasks[0].Held, held, 1e-12)
}

// fnvTask is FNV-1a (64 bits) of a task's name, the seed of its rows'
// hash, written out here apart from the package.
func fnvTask(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

// TestSamplerConcurrent adds rows from many goroutines while checkpoints,
// rotations and metric scrapes run beside them (go test -race), and checks
// that the windows' files together hold exactly every row: the sums of
// all files against plain loops, within float64 rounding.
func TestSamplerConcurrent(t *testing.T) {
	const d, workers, batches, batch = 5, 8, 40, 3
	set := goodSettings(t.TempDir())
	set.Fraction, set.MaxConcurrent = 1, workers
	s, err := New(set, d)
	if err != nil {
		t.Fatal(err)
	}
	var clock sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		now = now.Add(time.Second)
		return now
	}
	rng := rand.New(rand.NewPCG(7, 8))
	data := make([][2][]float32, workers)
	for w := range data {
		data[w][0], data[w][1] = rows(rng, batches*batch, d)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			model := []string{"model_a", "model_b", "ensemble_a"}[w%3]
			for k := 0; k < batches; {
				x, _ := s.Admit(Request{Model: model})
				if x == nil {
					continue // the others hold every slot: try again
				}
				lo, hi := k*batch*d, (k+1)*batch*d
				if err := x.Add(data[w][0][lo:hi], data[w][1][lo:hi]); err != nil {
					t.Error(err)
				}
				k++
				if w == 0 && k%10 == 0 { // windows end while the others add
					if err := s.Rotate(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			switch i % 3 {
			case 0:
				err = s.Rotate()
			case 1:
				err = s.Flush()
			default:
				collect(t, s)
			}
			if err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	close(stop)
	side.Wait()
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(set.Dir, "*"+FileSuffix))
	if len(files) < 2 {
		t.Fatalf("%d files: want the rotations' windows", len(files))
	}
	got := map[string]*react.Accumulator{"a": react.NewAccumulator(d), "b": react.NewAccumulator(d)}
	for _, p := range files {
		f, err := partialfile.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ft := range f.Tasks {
			if err := got[ft.Name].Merge(ft.Acc); err != nil {
				t.Fatal(err)
			}
		}
	}
	for task, ws := range map[string][]int{"a": {0, 2, 3, 5, 6}, "b": {1, 4, 7}} {
		var mtl, ind []float32
		for _, w := range ws {
			mtl, ind = append(mtl, data[w][0]...), append(ind, data[w][1]...)
		}
		checkSums(t, "task "+task, got[task], sumRows(mtl, ind, d, nil), 1e-12)
	}
	if s.InFlight() != 0 {
		t.Errorf("%d samples still in flight", s.InFlight())
	}
}

// TestAdmit checks the decisions and their order: not configured (not
// counted), opt-out, the fraction, saturation, the bound on samples in
// flight; and that Add and Skip release the slot once.
func TestAdmit(t *testing.T) {
	var none *Sampler
	if x, r := none.Admit(Request{Model: "model_a"}); x != nil || r != NotConfigured {
		t.Errorf("nil sampler: %v, %v", x, r)
	}
	set := goodSettings(t.TempDir())
	set.Fraction, set.MaxConcurrent = 1, 1
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    Request
		want Reason
	}{
		{Request{Model: "other"}, NotConfigured},
		{Request{Model: "model_a", OptOut: true, Saturated: true}, OptOut},
		{Request{Model: "model_a", Saturated: true}, Saturated},
	} {
		if x, r := s.Admit(tc.r); x != nil || r != tc.want {
			t.Errorf("%+v: %v, want %v", tc.r, r, tc.want)
		}
	}
	x, r := s.Admit(Request{Model: "model_a"})
	if x == nil || r != Sampled || x.Task() != "a" || x.Expert() != set.Tasks[0].Expert {
		t.Fatalf("admit: %v %v", x, r)
	}
	if y, r := s.Admit(Request{Model: "model_b"}); y != nil || r != Busy {
		t.Errorf("second sample with max_concurrent 1: %v", r)
	}
	if err := x.Add([]float32{1, 2}, []float32{float32(math.NaN()), 0}); err == nil {
		t.Error("Add of a NaN: no error")
	}
	if err := x.Add([]float32{1, 2}, []float32{3, 4}); err == nil {
		t.Error("second Add of a sample: no error")
	}
	x.Skip(Failed) // does nothing: already released
	y, _ := s.Admit(Request{Model: "model_b"})
	if y == nil {
		t.Fatal("slot not released")
	}
	y.Skip(Failed)
	y.Skip(Failed)
	if s.InFlight() != 0 {
		t.Errorf("in flight %d after Skip", s.InFlight())
	}
	m := s.models["model_a"]
	if m.skipped[OptOut].Load() != 1 || m.skipped[Saturated].Load() != 1 || m.skipped[Invalid].Load() != 1 || m.requests.Load() != 0 {
		t.Errorf("model_a counters: opt_out %d, saturated %d, invalid %d, requests %d", m.skipped[OptOut].Load(),
			m.skipped[Saturated].Load(), m.skipped[Invalid].Load(), m.requests.Load())
	}
	if b := s.models["model_b"]; b.skipped[Busy].Load() != 1 || b.skipped[Failed].Load() != 1 {
		t.Errorf("model_b counters: concurrency %d, failed %d", b.skipped[Busy].Load(), b.skipped[Failed].Load())
	}

	// The fraction: exact in the long run, the same sequence every time.
	for _, f := range []float64{0.01, 0.25} {
		set.Fraction, set.MaxConcurrent = f, 1
		draw := func() []bool {
			s, err := New(set, 2)
			if err != nil {
				t.Fatal(err)
			}
			var out []bool
			for range 20000 {
				x, _ := s.Admit(Request{Model: "model_a"})
				out = append(out, x != nil)
				if x != nil {
					x.Skip(Failed)
				}
			}
			return out
		}
		a, b := draw(), draw()
		taken := 0
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("fraction %g: draw %d differs between two samplers", f, i)
			}
			if a[i] {
				taken++
			}
		}
		if got := float64(taken) / float64(len(a)); math.Abs(got-f) > 4*math.Sqrt(f*(1-f)/float64(len(a))) {
			t.Errorf("fraction %g: drew %g", f, got)
		}
	}
}

// TestRotateFailureKeepsRows checks that a window whose file cannot be
// written goes on with every row.
func TestRotateFailureKeepsRows(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	set := goodSettings(filepath.Join(blocker, "sub")) // a directory under a file: unwritable
	set.Fraction = 1
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	mtl, ind := []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8}
	add := func() {
		x, _ := s.Admit(Request{Model: "model_a"})
		if err := x.Add(mtl, ind); err != nil {
			t.Fatal(err)
		}
	}
	add()
	start := s.Window()
	if err := s.Rotate(); err == nil {
		t.Fatal("Rotate into an unwritable directory: no error")
	}
	add()
	if !s.Window().Equal(start) {
		t.Errorf("window moved from %v to %v after a failed rotation", start, s.Window())
	}
	s.set.Dir = dir
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := partialfile.Load(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Tasks[0].Acc.N(); n != 4 {
		t.Errorf("N = %d after a failed rotation, want 4 (every row)", n)
	}
	if got := s.results[1].Load(); got != 1 {
		t.Errorf("%d failed writes counted, want 1", got)
	}
}

// TestRun checks that Run writes on its ticks and at the end.
func TestRun(t *testing.T) {
	set := goodSettings(t.TempDir())
	set.Fraction, set.Interval, set.Window = 1, 5*time.Millisecond, time.Hour
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx, func(err error) { t.Error(err) }) }()
	x, _ := s.Admit(Request{Model: "model_b"})
	if err := x.Add([]float32{1, 2}, []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.results[0].Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	y, _ := s.Admit(Request{Model: "model_b"})
	if err := y.Add([]float32{1, 2}, []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f, err := partialfile.Load(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Tasks[0].Acc.N(); n != 2 {
		t.Errorf("the last file holds %d rows, want 2: the final write", n)
	}
}

// TestSampleEdges: Skip with what is not a skip's reason (NotConfigured,
// Sampled, out of range) counts Failed, and a skip's reason itself; Add of
// no rows is refused and counted Invalid.
func TestSampleEdges(t *testing.T) {
	set := goodSettings(t.TempDir())
	set.Fraction = 1
	for _, tc := range []struct {
		skip, counted Reason
	}{
		{NotConfigured, Failed},
		{Sampled, Failed},
		{numReasons, Failed},
		{-1, Failed},
		{Saturated, Saturated},
		{Busy, Busy},
		{Failed, Failed},
	} {
		s, err := New(set, 2)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := s.Admit(Request{Model: "model_a"})
		x.Skip(tc.skip)
		m := s.models["model_a"]
		for r := Sampled; r < numReasons; r++ {
			want := uint64(0)
			if r == tc.counted {
				want = 1
			}
			if got := m.skipped[r].Load(); got != want {
				t.Errorf("Skip(%v): skipped{%v} = %d, want %d", tc.skip, r, got, want)
			}
		}
	}
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := s.Admit(Request{Model: "model_a"})
	if err := x.Add(nil, nil); err == nil {
		t.Error("Add of no rows: no error")
	}
	if m := s.models["model_a"]; m.skipped[Invalid].Load() != 1 || m.requests.Load() != 0 {
		t.Errorf("Add of no rows: invalid %d, requests %d; want 1, 0", m.skipped[Invalid].Load(), m.requests.Load())
	}
}

// TestRotateWritesTasksWithRows: a rotation writes the tasks that got
// rows in the window, and no file for a window without any.
func TestRotateWritesTasksWithRows(t *testing.T) {
	set := goodSettings(t.TempDir())
	set.Fraction = 1
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := s.Admit(Request{Model: "model_b"})
	if err := x.Add([]float32{1, 2}, []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	for range 2 { // the second window has no rows
		if err := s.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := partialfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tasks) != 1 || f.Tasks[0].Name != "b" || f.Tasks[0].Acc.N() != 1 {
		t.Errorf("%d tasks in the file, want b's only, with its row", len(f.Tasks))
	}
	if files, _ := filepath.Glob(filepath.Join(set.Dir, "*"+FileSuffix)); len(files) != 1 {
		t.Errorf("files %v, want the first window's only", files)
	}
}

// TestRunRotatesAtWindow: Run starts a new window once exactly
// Settings.Window has passed since the current one started.
func TestRunRotatesAtWindow(t *testing.T) {
	set := goodSettings(t.TempDir())
	set.Fraction, set.Interval, set.Window = 1, time.Millisecond, time.Hour
	s, err := New(set, 2)
	if err != nil {
		t.Fatal(err)
	}
	start := s.Window()
	s.now = func() time.Time { return start.Add(set.Window) }
	x, _ := s.Admit(Request{Model: "model_a"})
	if err := x.Add([]float32{1, 2}, []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx, func(err error) { t.Error(err) }) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.results[0].Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.Window(); !got.Equal(start.Add(set.Window)) {
		t.Errorf("window %v after Window passed, want a new one from %v", got, start.Add(set.Window))
	}
	if f, err := partialfile.Load(path); err != nil || f.Tasks[0].Acc.N() != 1 {
		t.Errorf("the first window's file: %v", err)
	}
}
