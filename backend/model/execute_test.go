package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/triton"
)

// zooDir holds the demo zoo's components file (D = 64, six tasks).
const zooDir = "../../tritonmodels/zoo"

// loadZoo loads a react model of datatype dt over the zoo's components
// file, named relative to zooDir as the version directory.
func loadZoo(t testing.TB, dt, params string) *Model {
	t.Helper()
	if params != "" {
		params = ", " + params
	}
	cfg, err := ParseConfig(config(64, "TYPE_"+dt, `["64"]`, `"components": {"string_value": "components.safetensors"}`+params), zooDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(context.Background(), cfg, zooDir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reference is W_p z for each row of z, in float64, with W_p from the
// one-shot solver (not the serving path's cached, possibly factored one).
func reference(t testing.TB, spec string, z []float32, d int) []float64 {
	t.Helper()
	return referenceWith(t, nil, spec, z, d)
}

// referenceWith is reference with the file's options changed by opts (nil:
// as calibrated).
func referenceWith(t testing.TB, opts func(*react.Options), spec string, z []float32, d int) []float64 {
	t.Helper()
	comps, _, err := control.LoadComponents(filepath.Join(zooDir, "components.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := react.ParsePreference(spec, comps.TaskNames())
	if err != nil {
		t.Fatal(err)
	}
	o := react.DefaultOptions(comps)
	if opts != nil {
		opts(&o)
	}
	s, err := react.NewOneShotSolver(comps, o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Solve(p.Rounded())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(z))
	for r := 0; r < len(z)/d; r++ {
		for i := 0; i < d; i++ {
			var v float64
			for j := 0; j < d; j++ {
				v += w.At(i, j) * float64(z[r*d+j])
			}
			out[r*d+i] = v
		}
	}
	return out
}

// request makes a request of rows random rows encoded as dt.
func request(t testing.TB, rng *rand.Rand, dt string, rows, d int, keys control.Values) (Request, []float32) {
	t.Helper()
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	data, err := triton.EncodeFloat32(nil, dt, z)
	if err != nil {
		t.Fatal(err)
	}
	// What the model sees is the encoded value.
	z, err = triton.DecodeFloat32(nil, dt, data)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Shape: []int64{int64(rows), int64(d)}, Data: data, Keys: keys}, z
}

func pref(spec string) control.Values   { return control.Values{Preference: spec, HasPreference: true} }
func preset(name string) control.Values { return control.Values{Preset: name, HasPreset: true} }

func TestExecuteGivesEachRequestItsOwnAnswer(t *testing.T) {
	const uniform = "fashion=1,mnist=1,digits=1,letters=1,greek=1,fontdigits=1"
	for _, dt := range []string{"FP32", "FP16", "BF16"} {
		t.Run(dt, func(t *testing.T) {
			m := loadZoo(t, dt, `"preset.uniform": {"string_value": "`+uniform+`"}`)
			d := m.D()
			rng := rand.New(rand.NewPCG(3, uint64(len(dt))))
			cases := []struct {
				keys control.Values
				spec string // the W_p applied; "" for none
				echo string // the applied preference's canonical form
				err  string // the request's error, if it fails
			}{
				{pref("fashion=0.6,mnist=0.4"), "fashion=0.6,mnist=0.4", "fashion=0.6,mnist=0.4", ""},
				{control.Values{}, "", "none", ""},
				{pref("fashion=1,bogus=1"), "", "", `unknown task "bogus"`},
				// Rounded to 10⁻⁶, the four units lost go to the first tasks (docs/contracts.md).
				{preset("uniform"), uniform, "fashion=0.166667,mnist=0.166667,digits=0.166667,letters=0.166667,greek=0.166666,fontdigits=0.166666", ""},
				{pref("mnist=0.4,fashion=0.6"), "fashion=0.6,mnist=0.4", "fashion=0.6,mnist=0.4", ""}, // the first group again
				{pref("none"), "", "none", ""},
				{preset("nope"), "", "", `"nope"`},
			}
			reqs := make([]Request, len(cases))
			zs := make([][]float32, len(cases))
			for i, c := range cases {
				reqs[i], zs[i] = request(t, rng, dt, 1+i%3, d, c.keys)
			}
			outs := make(map[int][]byte)
			var sc Scratch
			got := m.Execute(context.Background(), reqs, func(i int) ([]byte, error) {
				if outs[i] != nil {
					t.Errorf("request %d: output allocated twice", i)
				}
				outs[i] = make([]byte, len(reqs[i].Data))
				return outs[i], nil
			}, &sc)
			if len(sc.groups) != 3 {
				t.Errorf("%d groups, want 3 (one preference in two spellings, the preset, no correction)", len(sc.groups))
			}
			for i, c := range cases {
				o := got[i]
				if c.err != "" {
					var re *RequestError
					if !errors.As(o.Err, &re) || re.Code != CodeInvalidArgument || !strings.Contains(o.Err.Error(), c.err) {
						t.Errorf("request %d: error %v, want INVALID_ARGUMENT with %s", i, o.Err, c.err)
					}
					if outs[i] != nil {
						t.Errorf("request %d: a failed request got an output", i)
					}
					continue
				}
				if o.Err != nil {
					t.Fatalf("request %d: %v", i, o.Err)
				}
				if got := o.Choice.Canonical(); got != c.echo {
					t.Errorf("request %d: applied %q, want %q", i, got, c.echo)
				}
				if c.spec == "" {
					if string(outs[i]) != string(reqs[i].Data) || o.Choice.Corrects() {
						t.Errorf("request %d: without a correction the output must be the input", i)
					}
					continue
				}
				y, err := triton.DecodeFloat32(nil, dt, outs[i])
				if err != nil {
					t.Fatal(err)
				}
				want := reference(t, c.spec, zs[i], d)
				// float32 arithmetic, then the datatype's rounding.
				tol := map[string]float64{"FP32": 1e-5, "FP16": 2e-3, "BF16": 1.6e-2}[dt]
				for k := range y {
					if diff := math.Abs(float64(y[k]) - want[k]); diff > tol*(1+math.Abs(want[k])) {
						t.Fatalf("request %d element %d: %v, want %v", i, k, y[k], want[k])
					}
				}
			}
		})
	}
}

func TestExecuteChecksShapes(t *testing.T) {
	m := loadZoo(t, "FP32", "")
	ok := make([]byte, 2*64*4)
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"wrong D", Request{Shape: []int64{2, 32}, Data: ok}, "shape [2 32]: want [batch, 64]"},
		{"one dimension", Request{Shape: []int64{128}, Data: ok}, "shape [128]"},
		{"short data", Request{Shape: []int64{2, 64}, Data: ok[:100]}, "100 bytes for shape [2 64] of FP32: want 512"},
		// (2⁵⁶+1)·64·4 bytes wrap to 256, which the data matches: refused
		// before its rows are counted (which panicked, killing the server).
		{"byte count overflows", Request{Shape: []int64{1<<56 + 1, 64}, Data: ok[:256], Keys: pref("greek=1")}, "a batch of more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good, _ := request(t, rand.New(rand.NewPCG(1, 1)), "FP32", 1, 64, pref("greek=1"))
			out := m.Execute(context.Background(), []Request{tc.req, good}, func(i int) ([]byte, error) {
				if i == 0 {
					t.Error("the bad request got an output")
				}
				return make([]byte, len(good.Data)), nil
			}, &Scratch{})
			var re *RequestError
			if !errors.As(out[0].Err, &re) || re.Code != CodeInvalidArgument || !strings.Contains(out[0].Err.Error(), tc.want) {
				t.Errorf("error %v, want INVALID_ARGUMENT with %q", out[0].Err, tc.want)
			}
			if out[1].Err != nil {
				t.Errorf("the good request failed with its neighbour: %v", out[1].Err)
			}
		})
	}
}

func TestExecuteAllocFailureFailsOnlyThatRequest(t *testing.T) {
	m := loadZoo(t, "FP32", "")
	for _, tc := range []struct {
		name string
		keys control.Values
	}{{"corrected", pref("greek=1")}, {"uncorrected", control.Values{}}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 5))
			a, _ := request(t, rng, "FP32", 1, 64, tc.keys)
			b, _ := request(t, rng, "FP32", 1, 64, tc.keys)
			out := m.Execute(context.Background(), []Request{a, b}, func(i int) ([]byte, error) {
				if i == 0 {
					return nil, errors.New("no memory")
				}
				return make([]byte, len(b.Data)), nil
			}, &Scratch{})
			var re *RequestError
			if !errors.As(out[0].Err, &re) || re.Code != CodeInternal || !strings.Contains(out[0].Err.Error(), "no memory") {
				t.Errorf("request 0: %v, want INTERNAL with the allocation's error", out[0].Err)
			}
			if out[1].Err != nil {
				t.Errorf("request 1 failed with its neighbour: %v", out[1].Err)
			}
		})
	}
}

// TestLoadAppliesParameters checks that the configuration's beta,
// normalization and default_preference shape the W_p a request gets,
// against the one-shot solver with the same options, and that
// max_preference_length bounds a request's preference.
func TestLoadAppliesParameters(t *testing.T) {
	// The zoo's file is calibrated with β = 0.1 and sum normalisation.
	const spec = "fashion=0.7,letters=0.3"
	for _, tc := range []struct {
		name, params string
		keys         control.Values
		opts         func(*react.Options)
		err          string // the request's error, if it fails
	}{
		{"beta", `"beta": {"string_value": "5"}`, pref(spec), func(o *react.Options) { o.Beta = 5 }, ""},
		{"normalization", `"normalization": {"string_value": "mean"}`, pref(spec),
			func(o *react.Options) { o.Normalization = react.NormMean }, ""},
		{"both", `"beta": {"string_value": "0.5"}, "normalization": {"string_value": "mean"}`, pref(spec),
			func(o *react.Options) { o.Beta, o.Normalization = 0.5, react.NormMean }, ""},
		{"default preference", `"default_preference": {"string_value": "` + spec + `"}`, control.Values{}, nil, ""},
		{"max_preference_length", `"max_preference_length": {"string_value": "10"}`, pref(spec), nil,
			"longer than the limit of 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadZoo(t, "FP32", tc.params)
			req, z := request(t, rand.New(rand.NewPCG(9, 9)), "FP32", 3, m.D(), tc.keys)
			dst := make([]byte, len(req.Data))
			out := m.Execute(context.Background(), []Request{req}, func(int) ([]byte, error) { return dst, nil }, &Scratch{})
			if tc.err != "" {
				var re *RequestError
				if !errors.As(out[0].Err, &re) || re.Code != CodeInvalidArgument || !strings.Contains(out[0].Err.Error(), tc.err) {
					t.Fatalf("error %v, want INVALID_ARGUMENT with %q", out[0].Err, tc.err)
				}
				return
			}
			if out[0].Err != nil {
				t.Fatal(out[0].Err)
			}
			y, err := triton.DecodeFloat32(nil, "FP32", dst)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceWith(t, tc.opts, spec, z, m.D())
			calibrated := reference(t, spec, z, m.D())
			var moved float64 // how far the options move the answer from the file's
			for k := range y {
				if diff := math.Abs(float64(y[k]) - want[k]); diff > 1e-5*(1+math.Abs(want[k])) {
					t.Fatalf("element %d: %v, want %v", k, y[k], want[k])
				}
				moved = math.Max(moved, math.Abs(want[k]-calibrated[k]))
			}
			if tc.opts != nil && moved < 1e-3 {
				t.Fatalf("the options change W_p z by %g only: the test cannot tell them apart", moved)
			}
		})
	}
}

// TestLoadCacheSize checks that cache_size bounds the W_p kept: with one
// entry, a second preference evicts the first, which is solved again.
func TestLoadCacheSize(t *testing.T) {
	for _, tc := range []struct {
		params string
		kept   bool
	}{{`"cache_size": {"string_value": "1"}`, false}, {"", true}} {
		t.Run(tc.params, func(t *testing.T) {
			m := loadZoo(t, "FP32", tc.params)
			matrix := func(spec string) *control.Matrix {
				c, err := m.Profile().Resolve(control.Request{Parameter: pref(spec)})
				if err != nil {
					t.Fatal(err)
				}
				w, err := m.Profile().Matrix(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			first := matrix("fashion=1")
			matrix("mnist=1")
			if kept := matrix("fashion=1") == first; kept != tc.kept {
				t.Errorf("the first W_p kept after a second preference: %v, want %v", kept, tc.kept)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	abs, err := filepath.Abs(filepath.Join(zooDir, "components.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dims, params, dir, want string
	}{
		{"absolute path", `["64"]`, `"components": {"string_value": "` + abs + `"}`, t.TempDir(), ""},
		{"relative to the version directory", `["64"]`, `"components": {"string_value": "components.safetensors"}`, zooDir, ""},
		{"missing file", `["64"]`, `"components": {"string_value": "none.safetensors"}`, t.TempDir(),
			"calibrate one against the running backbone and experts (calibrate fit --triton ...), then put it there"},
		{"D differs", `["32"]`, `"components": {"string_value": "components.safetensors"}`, zooDir,
			"input[0]: dims [32]: the components file " + filepath.Join(zooDir, "components.safetensors") + " has D = 64"},
		{"bad default and preset", `["64"]`, `"components": {"string_value": "components.safetensors"},
			"default_preference": {"string_value": "cars=1"}, "preset.p": {"string_value": "fashion=-1"}`, zooDir,
			"parameters.default_preference: preference \"cars=1\": unknown task \"cars\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig(config(8, "TYPE_FP32", tc.dims, tc.params), "")
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(context.Background(), cfg, tc.dir)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m.D() != 64 || len(m.Profile().Tasks()) != 6 {
					t.Errorf("D %d, tasks %v", m.D(), m.Profile().Tasks())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(tc.name, "preset") && !strings.Contains(err.Error(), "parameters.preset.p: ") {
				t.Errorf("the preset's problem is not named by its parameter: %v", err)
			}
		})
	}
}

// BenchmarkExecute is the step's own work for one batch: resolving, one
// W_p application per preference, decoding and encoding (the server's
// share is measured by bench/sidecar-controllable.sh).
func BenchmarkExecute(b *testing.B) {
	for _, dt := range []string{"FP32", "FP16"} {
		for _, rows := range []int{1, 8, 64} {
			b.Run(dt+"/rows="+itoa(rows), func(b *testing.B) {
				m := loadZoo(b, dt, "")
				rng := rand.New(rand.NewPCG(1, 2))
				req, _ := request(b, rng, dt, rows, m.D(), pref("fashion=0.6,mnist=0.4"))
				reqs := []Request{req}
				out := make([]byte, len(req.Data))
				alloc := func(int) ([]byte, error) { return out, nil }
				var sc Scratch
				m.Execute(context.Background(), reqs, alloc, &sc) // solve and form W_p
				for m.Execute(context.Background(), reqs, alloc, &sc); !formed(m, "fashion=0.6,mnist=0.4"); {
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(req.Data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					m.Execute(context.Background(), reqs, alloc, &sc)
				}
			})
		}
	}
}

// formed reports whether the W_p of spec is formed (the background
// formation after the first request has finished).
func formed(m *Model, spec string) bool {
	c, err := m.Profile().Resolve(control.Request{Parameter: pref(spec)})
	if err != nil {
		panic(err)
	}
	w, err := m.Profile().Matrix(context.Background(), c)
	return err == nil && w.Formed()
}

// TestExecuteConcurrentInstances runs one model from several instances at
// once, as Triton does, each with its own scratch: new preferences are
// solved once and shared, and every answer is right (run with -race).
func TestExecuteConcurrentInstances(t *testing.T) {
	m := loadZoo(t, "FP32", "")
	specs := []string{"fashion=1", "mnist=1,greek=2", "letters=1", "digits=0.3,fontdigits=0.7"}
	const instances, rounds = 4, 5
	errs := make(chan error, instances*rounds*len(specs))
	done := make(chan struct{})
	for g := 0; g < instances; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			var sc Scratch
			for r := 0; r < rounds; r++ {
				reqs := make([]Request, len(specs))
				zs := make([][]float32, len(specs))
				for i, s := range specs {
					reqs[i], zs[i] = request(t, rng, "FP32", 1+(g+r+i)%4, 64, pref(s))
				}
				outs := make([][]byte, len(reqs))
				got := m.Execute(context.Background(), reqs, func(i int) ([]byte, error) {
					outs[i] = make([]byte, len(reqs[i].Data))
					return outs[i], nil
				}, &sc)
				for i, s := range specs {
					if got[i].Err != nil {
						errs <- got[i].Err
						continue
					}
					y, _ := triton.DecodeFloat32(nil, "FP32", outs[i])
					want := reference(t, s, zs[i], 64)
					for k := range y {
						if math.Abs(float64(y[k])-want[k]) > 1e-4*(1+math.Abs(want[k])) {
							errs <- errors.New(s + ": wrong answer under concurrency")
							break
						}
					}
				}
			}
		}(g)
	}
	for g := 0; g < instances; g++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkExecuteManyPreferences is one batch of 64 one-row requests, as
// Triton's dynamic batcher hands the step, spread over K distinct
// preferences (request j of batch i has preference (64 i + j) mod K):
// "cached" with every W_p formed beforehand and a cache that holds them
// all, "cache=K/2" with a cache of half as many entries, so that every
// batch evicts and solves again. rows/s against K = 1 is the cost of many
// preferences in flight (issue 28: at least 80 % at K = 256, cached).
func BenchmarkExecuteManyPreferences(b *testing.B) {
	const batch = 64
	tasks := []string{"fashion", "mnist", "greek", "letters", "digits", "fontdigits"}
	specs := func(k int) []string {
		s := make([]string, k)
		for i := range s {
			// Distinct for every i: two weights in (0, 1], their tasks
			// cycling through the zoo's pairs.
			a, c := tasks[i%len(tasks)], tasks[(i/len(tasks)+1+i%len(tasks))%len(tasks)]
			if a == c {
				c = tasks[(i+1)%len(tasks)]
			}
			s[i] = fmt.Sprintf("%s=%d,%s=%d", a, 1+i, c, 1000-i)
		}
		return s
	}
	for _, k := range []int{1, 16, 256} {
		for _, cache := range []string{"cached", "cache=K/2"} {
			if k == 1 && cache != "cached" {
				continue
			}
			b.Run(fmt.Sprintf("K=%d/%s", k, cache), func(b *testing.B) {
				size := 2 * k
				if cache != "cached" {
					size = max(k/2, 1)
				}
				m := loadZoo(b, "FP32", `"cache_size": {"string_value": "`+itoa(size)+`"}`)
				rng := rand.New(rand.NewPCG(3, 4))
				ss := specs(k)
				seen := map[string]bool{}
				for _, s := range ss {
					if seen[s] {
						b.Fatalf("preference %q twice", s)
					}
					seen[s] = true
				}
				// Every batch's requests, precomputed: batches cycle.
				nb := max(k/batch, 1)
				batches := make([][]Request, nb)
				for i := range batches {
					batches[i] = make([]Request, batch)
					for j := range batches[i] {
						batches[i][j], _ = request(b, rng, "FP32", 1, m.D(), pref(ss[(i*batch+j)%k]))
					}
				}
				out := make([]byte, len(batches[0][0].Data))
				alloc := func(int) ([]byte, error) { return out, nil }
				var sc Scratch
				if cache == "cached" {
					for _, reqs := range batches {
						m.Execute(context.Background(), reqs, alloc, &sc)
					}
					for _, s := range ss {
						for !formed(m, s) {
							time.Sleep(time.Millisecond)
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j, o := range m.Execute(context.Background(), batches[i%nb], alloc, &sc) {
						if o.Err != nil {
							b.Fatalf("request %d: %v", j, o.Err)
						}
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
