package componentsfile

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/internal/reacttest"
	"github.com/mergectl/react-triton/react/safetensors"
)

// TestSumSquaresAndReconError checks the optional per-task fields: written
// when recorded and read back bit for bit, absent in a file written before
// them (which loads with 0), and refused when malformed.
func TestSumSquaresAndReconError(t *testing.T) {
	c := reacttest.Components(t, 3, 2, "a", "b")
	c.Tasks[0].ReconError = 0.1234567890123
	c.Tasks[1].SumSquares = 0 // not recorded
	var buf bytes.Buffer
	if err := Write(&buf, c); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range got.Tasks {
		if tt.SumSquares != c.Tasks[i].SumSquares || tt.ReconError != c.Tasks[i].ReconError {
			t.Errorf("task %s: read sum of squares %v, error %v; wrote %v, %v", tt.Name, tt.SumSquares, tt.ReconError, c.Tasks[i].SumSquares, c.Tasks[i].ReconError)
		}
		if tt.Provenance != nil {
			t.Errorf("task %s: provenance %v: the fields are the format's, not provenance", tt.Name, tt.Provenance)
		}
	}
	md := func(b []byte) map[string]string {
		f, err := safetensors.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return f.Metadata
	}(buf.Bytes())
	for _, k := range []string{"task.b.sum_squares", "task.b.recon_error"} {
		if _, ok := md[k]; ok {
			t.Errorf("metadata has %q for a value not recorded", k)
		}
	}

	// A file written before the fields: the same file without them.
	old := rewriteFile(t, buf.Bytes(), true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
		delete(md, "task.a.sum_squares")
		delete(md, "task.a.recon_error")
		return ts
	})
	o, err := Parse(old)
	if err != nil {
		t.Fatalf("a file without the optional fields: %v", err)
	}
	if o.Tasks[0].SumSquares != 0 || o.Tasks[0].ReconError != 0 {
		t.Errorf("old file: sum of squares %v, error %v, want 0 (not recorded)", o.Tasks[0].SumSquares, o.Tasks[0].ReconError)
	}

	for _, bad := range []string{"-1", "NaN", "+Inf", "x", ""} {
		b := rewriteFile(t, buf.Bytes(), true, func(ts []safetensors.Tensor, md map[string]string) []safetensors.Tensor {
			md["task.a.recon_error"] = bad
			return ts
		})
		if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), `metadata "task.a.recon_error"`) {
			t.Errorf("recon_error %q: err = %v, want it refused", bad, err)
		}
	}

	bad := *c.Tasks[0]
	bad.SumSquares = math.NaN()
	cc := *c
	cc.Tasks = []*react.TaskStats{&bad, c.Tasks[1]}
	if err := Write(&bytes.Buffer{}, &cc); err == nil {
		t.Error("Write of a NaN sum of squares: no error")
	}
}
