package triton

import (
	"math"

	"github.com/x448/float16"
)

// FP16 conversion uses github.com/x448/float16: its float32 -> binary16
// conversion rounds to nearest even and was checked against all 2^32 float32
// inputs by its author, and it has no dependencies. BF16 is simple enough to
// write here.

// FP16Bits returns the IEEE 754 binary16 bits nearest to f, rounding ties to
// even. Values beyond the binary16 range become ±Inf, tiny values become
// binary16 subnormals or ±0, and NaN stays a (quiet) NaN.
func FP16Bits(f float32) uint16 {
	return float16.Fromfloat32(f).Bits()
}

// FP16Float32 returns the float32 value of the binary16 bits h. Every
// binary16 value, subnormals included, is exact in float32.
func FP16Float32(h uint16) float32 {
	return float16.Frombits(h).Float32()
}

// BF16Bits returns the bfloat16 bits nearest to f (the top 16 bits of a
// float32), rounding ties to even. Values beyond the range become ±Inf, and
// NaN stays a quiet NaN with its sign.
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload, force quiet
		return uint16(u>>16) | 0x0040
	}
	// Add half an ulp of bfloat16, minus one when the kept part is even, so
	// that exact ties round to even. A carry into the exponent is correct:
	// it rounds up to the next binade or to Inf.
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Float32 returns the float32 value of the bfloat16 bits b, which is
// exact.
func BF16Float32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}
