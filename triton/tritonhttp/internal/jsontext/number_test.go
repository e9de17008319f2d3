package jsontext

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestScannerFloat compares the Scanner's number reading with strconv on
// random numbers of many forms, through both its fast and slow paths.
func TestScannerFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 300000 {
		var s string
		switch r.IntN(4) {
		case 0: // what Go and Python write for float32 and float64 values
			f := math.Float64frombits(r.Uint64())
			if r.IntN(2) == 0 {
				f = float64(math.Float32frombits(r.Uint32()))
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			s = strconv.FormatFloat(f, "eg"[r.IntN(2)], -1, 64)
		default:
			s = strings.TrimLeft(digits(1+r.IntN(20)), "0")
			if s == "" {
				s = "0"
			}
			if r.IntN(2) == 0 {
				s += "." + digits(1+r.IntN(20))
			}
			if r.IntN(3) == 0 {
				s += "eE"[r.IntN(2):][:1] + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(400))
			}
			if r.IntN(2) == 0 {
				s = "-" + s
			}
		}
		want, werr := strconv.ParseFloat(s, 64)
		sc := &Scanner{buf: []byte(s + ",")}
		got, err := sc.Float()
		if werr != nil {
			if err == nil {
				t.Fatalf("%s: read %v, strconv fails: %v", s, got, werr)
			}
			continue
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(want) || sc.pos != len(s) {
			t.Fatalf("%s: read %v (%v, stopped at %d), strconv %v", s, got, err, sc.pos, want)
		}
	}
}

func TestScannerFloatSyntax(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		pos  int
	}{
		{"0]", 0, 1}, {"-0,", math.Copysign(0, -1), 2}, {"01", 0, 1}, {"1.5e3x", 1500, 5},
		{"NaN", math.NaN(), 3}, {"-Infinity", math.Inf(-1), 9}, {"Inf]", math.Inf(1), 3},
	} {
		sc := &Scanner{buf: []byte(c.in)}
		got, err := sc.Float()
		same := math.Float64bits(got) == math.Float64bits(c.want) || (math.IsNaN(got) && math.IsNaN(c.want))
		if err != nil || !same || sc.pos != c.pos {
			t.Errorf("%q: %v, %v, pos %d; want %v, pos %d", c.in, got, err, sc.pos, c.want, c.pos)
		}
	}
	for _, in := range []string{"-", "1.", ".5", "1e", "1e+", "+1", "x", "Nan", "-I"} {
		sc := &Scanner{buf: []byte(in)}
		if got, err := sc.Float(); err == nil {
			t.Errorf("%q: read %v", in, got)
		}
	}
}
