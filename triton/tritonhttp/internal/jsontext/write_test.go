package jsontext

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Triton 2.51's JSON for FP64 outputs of these values, seen from its HTTP
// endpoint (a model casting its input to every datatype).
var tritonFP64 = []struct {
	v    float64
	want string
}{
	{0, "0.0"},
	{math.Copysign(0, -1), "-0.0"},
	{1.5, "1.5"},
	{300.7, "300.7"},
	{-2, "-2.0"},
	{1e-7, "1e-7"},
	{1e21, "1e21"},
	{1e22, "1e22"},
	{123456789.125, "123456789.125"},
	{0.1, "0.1"},
	{math.NaN(), "NaN"},
	{math.Inf(1), "Infinity"},
	{math.Inf(-1), "-Infinity"},
}

func TestAppendFloat64MatchesTriton(t *testing.T) {
	for _, c := range tritonFP64 {
		if got := string(AppendFloat(nil, c.v, 64)); got != c.want {
			t.Errorf("AppendFloat(%v, 64) = %s, Triton writes %s", c.v, got, c.want)
		}
	}
}

func TestAppendFloat32(t *testing.T) {
	for _, c := range []struct {
		v    float32
		want string
	}{
		// Triton writes float32 values as doubles (1.2000000476837159,
		// 1.0000000116860974e-7); we write the shortest float32 form in the
		// same layout.
		{1.2, "1.2"},
		{1e-7, "1e-7"},
		{300.7, "300.7"},
		{123456792, "123456790.0"}, // shortest digits, zero-padded: reads back as 123456792
		{5, "5.0"},
		{1e21, "1e21"},
		{1.5e21, "1.5e21"},
		{1e20, "100000000000000000000.0"},
		{0.000001, "0.000001"},
		{0.0000012, "0.0000012"},
		{1.2e-7, "1.2e-7"},
		{math.MaxFloat32, "3.4028235e38"},
		{math.SmallestNonzeroFloat32, "1e-45"},
		{-0.25, "-0.25"},
	} {
		if got := string(AppendFloat(nil, float64(c.v), 32)); got != c.want {
			t.Errorf("AppendFloat(%v, 32) = %s, want %s", c.v, got, c.want)
		}
	}
}

// TestAppendFloatRoundTrips checks on random bit patterns that the written
// Number reads back (as JSON, with strconv) to the same value, and carries
// a '.' or an exponent.
func TestAppendFloatRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f32 := math.Float32frombits(r.Uint32())
		f64 := math.Float64frombits(r.Uint64())
		for _, c := range []struct {
			v       float64
			bitSize int
		}{{float64(f32), 32}, {f64, 64}} {
			if math.IsNaN(c.v) || math.IsInf(c.v, 0) {
				continue
			}
			s := string(AppendFloat(nil, c.v, c.bitSize))
			back, err := strconv.ParseFloat(s, c.bitSize)
			if err != nil || back != c.v || math.Signbit(back) != math.Signbit(c.v) {
				t.Fatalf("AppendFloat(%v, %d) = %s, reads back as %v (%v)", c.v, c.bitSize, s, back, err)
			}
			if !json.Valid([]byte(s)) {
				t.Fatalf("AppendFloat(%v, %d) = %s, not a JSON number", c.v, c.bitSize, s)
			}
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				t.Fatalf("AppendFloat(%v, %d) = %s, reads as an integer", c.v, c.bitSize, s)
			}
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, c := range []struct {
		in          string
		asIs, valid string
	}{
		{"plain", `"plain"`, `"plain"`},
		// Seen from Triton: '"' and '\\' escaped, \n \t short, other control
		// characters as \u00XX in upper case, DEL and non-ASCII as they are.
		{"a\"b\\c\n\t\x01\x1f\x7f", `"a\"b\\c\n\t\u0001\u001F` + "\x7f\"", `"a\"b\\c\n\t\u0001\u001F` + "\x7f\""},
		{"\b\f\r", `"\b\f\r"`, `"\b\f\r"`},
		{"é€😀<&>\u2028", "\"é€😀<&>\u2028\"", "\"é€😀<&>\u2028\""},
		// Invalid UTF-8: Triton passes it through.
		{"\xff\xfeok\xe2\x82", "\"\xff\xfeok\xe2\x82\"", `"\ufffd\ufffdok\ufffd\ufffd"`},
	} {
		if got := string(AppendString(nil, c.in, false)); got != c.asIs {
			t.Errorf("AppendString(%q, false) = %q, want %q", c.in, got, c.asIs)
		}
		got := AppendString(nil, []byte(c.in), true)
		if string(got) != c.valid {
			t.Errorf("AppendString(%q, true) = %q, want %q", c.in, got, c.valid)
		}
		if !json.Valid(got) {
			t.Errorf("AppendString(%q, true) = %q: not valid JSON", c.in, got)
		}
	}
}

// TestAppendStringDecodes checks, against encoding/json, that every
// string of random bytes that is valid UTF-8 reads back unchanged.
func TestAppendStringDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		var back string
		out := AppendString(nil, b, true)
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %q: %v", b, out, err)
		}
		if want := string([]rune(string(b))); back != want { // invalid bytes become U+FFFD
			t.Fatalf("%q -> %q -> %q, want %q", b, out, back, want)
		}
	}
}
