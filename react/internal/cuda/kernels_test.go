//go:build cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// roundOnDevice runs RoundTo32 on src with the flag set to flag0 first,
// and returns the float32 values and the flag.
func roundOnDevice(t *testing.T, d *Device, src []float64, flag0 int32) ([]float32, int32) {
	t.Helper()
	n := len(src)
	got := make([]float32, n)
	var flag int32
	var ps, pd, pf Ptr
	defer func() { d.Free(ps); d.Free(pd); d.Free(pf) }()
	err := d.Do(func() error {
		var err error
		if ps, err = d.Alloc(8 * n); err != nil {
			return err
		}
		if pd, err = d.Alloc(4 * n); err != nil {
			return err
		}
		if pf, err = d.Alloc(4); err != nil {
			return err
		}
		if err := d.Upload64(ps, src); err != nil {
			return err
		}
		// The flag's four bytes, all set to one byte value.
		if err := d.Memset(pf, byte(flag0), 4); err != nil {
			return err
		}
		if err := d.RoundTo32(pd, ps, n, pf); err != nil {
			return err
		}
		if err := d.Download32(got, pd); err != nil {
			return err
		}
		flag, err = d.DownloadInt32(pf)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, flag
}

// sameFloat32 reports whether the device's value is Go's float32
// conversion of v, bit for bit (any NaN for a NaN).
func sameFloat32(got float32, v float64) bool {
	want := float32(v)
	if want != want {
		return got != got
	}
	return math.Float32bits(got) == math.Float32bits(want)
}

// TestRoundTo32: the rounding kernel gives Go's float32 conversion bit for
// bit (round to nearest even, subnormals, signed zeros), and sets the flag
// exactly when a result is ±Inf or NaN, as Float32MatrixTo refuses: not for
// ±MaxFloat32 or values that round down to it, but for the halfway point
// above it (which rounds to even: up), for negative overflow and for NaN.
// The flag is never cleared by the kernel. An n beyond one grid (4096
// blocks of 256 threads) checks the grid-stride loop, the zoo's D = 1280
// case (1,638,400 values).
func TestRoundTo32(t *testing.T) {
	d := openOrSkip(t)
	max32 := float64(math.MaxFloat32)
	half := max32 + math.Ldexp(1, 103) // halfway between MaxFloat32 and 2^128
	inRange := []float64{0, math.Copysign(0, -1), 1, -1, 1.0 / 3, -2.0 / 3, max32, -max32,
		math.Nextafter(half, 0), -math.Nextafter(half, 0), // round to ±MaxFloat32
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.SmallestNonzeroFloat32 / 3, 1e-50, -1e-50, // underflow to ±0
		1.5 * math.SmallestNonzeroFloat32, 0x1.fffffffp-127, 1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-50}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 300 {
		inRange = append(inRange, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(80)-42)))
	}
	got, flag := roundOnDevice(t, d, inRange, 0)
	for i, v := range inRange {
		if !sameFloat32(got[i], v) {
			t.Errorf("round(%v) = %v (%#x), want %v (%#x)", v, got[i], math.Float32bits(got[i]), float32(v), math.Float32bits(float32(v)))
		}
	}
	if flag != 0 {
		t.Errorf("values in float32's range set the flag to %d", flag)
	}
	if _, flag := roundOnDevice(t, d, inRange, 7); flag != 0x07070707 {
		t.Errorf("values in range changed a flag already set: %#x", flag)
	}

	for _, v := range []float64{half, -half, 1e39, -1e39, math.Inf(1), math.Inf(-1), math.NaN(), -max32 * 2} {
		// The value among values in range, at an odd position.
		src := []float64{1, 2, v, 3}
		got, flag := roundOnDevice(t, d, src, 0)
		if flag != 1 {
			t.Errorf("%v (rounding to %v) set the flag to %d, want 1", v, float32(v), flag)
		}
		for i, s := range src {
			if !sameFloat32(got[i], s) {
				t.Errorf("with %v: round(%v) = %v, want %v", v, s, got[i], float32(s))
			}
		}
	}

	// Beyond one grid: every value rounded; one value out of range in the
	// second pass of the loop sets the flag.
	const big = 4096*256 + 777
	src := make([]float64, big)
	for i := range src {
		src[i] = float64(i%1000)/7 - 50
	}
	got, flag = roundOnDevice(t, d, src, 0)
	if flag != 0 {
		t.Errorf("%d values in range set the flag to %d", big, flag)
	}
	for i, v := range src {
		if !sameFloat32(got[i], v) {
			t.Fatalf("%d values: [%d] = %v, want %v", big, i, got[i], float32(v))
		}
	}
	src[big-3] = -1e300
	if _, flag := roundOnDevice(t, d, src, 0); flag != 1 {
		t.Errorf("%d values, [%d] = -1e300: flag %d, want 1", big, big-3, flag)
	}
}
