package triton

import (
	"math"
	"testing"
)

// Bit patterns worked out by hand from the IEEE 754 binary16 layout (1 sign,
// 5 exponent bits biased by 15, 10 fraction bits) and the bfloat16 layout
// (the top 16 bits of a binary32: 1 sign, 8 exponent bits biased by 127,
// 7 fraction bits).

func TestFP16Bits(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3C00},
		{"minus two", -2, 0xC000},
		{"zero", 0, 0x0000},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		{"0.1 rounds to 0x2E66", 0.1, 0x2E66},
		{"one third", 1.0 / 3, 0x3555},
		{"max finite 65504", 65504, 0x7BFF},
		{"65519 rounds down to max", 65519, 0x7BFF},
		{"65520 ties to even: Inf", 65520, 0x7C00},
		{"1e6 overflows to Inf", 1e6, 0x7C00},
		{"-1e6 overflows to -Inf", -1e6, 0xFC00},
		{"+Inf", float32(math.Inf(1)), 0x7C00},
		{"-Inf", float32(math.Inf(-1)), 0xFC00},
		{"smallest normal 2^-14", 0x1p-14, 0x0400},
		{"largest subnormal 1023*2^-24", 1023 * 0x1p-24, 0x03FF},
		{"smallest subnormal 2^-24", 0x1p-24, 0x0001},
		{"2^-25 ties to even: zero", 0x1p-25, 0x0000},
		{"just above 2^-25 rounds up", 0x1p-25 + 0x1p-40, 0x0001},
		{"3*2^-25 ties to even: 2*2^-24", 3 * 0x1p-25, 0x0002},
		{"1+2^-11 ties to even: 1", 1 + 0x1p-11, 0x3C00},
		{"1+3*2^-11 ties to even: 0x3C02", 1 + 3*0x1p-11, 0x3C02},
		{"just above 1+2^-11 rounds up", 1 + 0x1p-11 + 0x1p-20, 0x3C01},
		{"float32 subnormal underflows", math.SmallestNonzeroFloat32, 0x0000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FP16Bits(tt.in); got != tt.want {
				t.Errorf("FP16Bits(%g) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestBF16Bits(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3F800000, 0x3F80},
		{"minus two", 0xC0000000, 0xC000},
		{"minus zero", 0x80000000, 0x8000},
		{"0.1 (0x3DCCCCCD) rounds up", 0x3DCCCCCD, 0x3DCD},
		{"1+2^-8 ties to even: 1", 0x3F808000, 0x3F80},
		{"1+3*2^-8 ties to even: 0x3F82", 0x3F818000, 0x3F82},
		{"just above 1+2^-8 rounds up", 0x3F808001, 0x3F81},
		{"just below 1+2^-8 rounds down", 0x3F807FFF, 0x3F80},
		{"max bfloat16 is exact", 0x7F7F0000, 0x7F7F},
		{"max float32 rounds to Inf", 0x7F7FFFFF, 0x7F80},
		{"+Inf", 0x7F800000, 0x7F80},
		{"-Inf", 0xFF800000, 0xFF80},
		{"quiet NaN", 0x7FC00000, 0x7FC0},
		{"negative quiet NaN", 0xFFC00000, 0xFFC0},
		{"signaling NaN stays NaN, not Inf", 0x7F800001, 0x7FC0},
		{"NaN payload in the kept bits", 0x7FA50000, 0x7FE5},
		{"smallest subnormal 2^-133", 0x00010000, 0x0001},
		{"float32 subnormal below half underflows", 0x00000001, 0x0000},
		{"subnormal tie to even: zero", 0x00008000, 0x0000},
		{"subnormal tie to even: 2", 0x00018000, 0x0002},
		{"largest subnormal rounds up to smallest normal", 0x007FFFFF, 0x0080},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := math.Float32frombits(tt.in)
			if got := BF16Bits(in); got != tt.want {
				t.Errorf("BF16Bits(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestHalfToFloat32(t *testing.T) {
	tests := []struct {
		name string
		f    func(uint16) float32
		in   uint16
		want float32
	}{
		{"fp16 one", FP16Float32, 0x3C00, 1},
		{"fp16 max", FP16Float32, 0x7BFF, 65504},
		{"fp16 smallest subnormal", FP16Float32, 0x0001, 0x1p-24},
		{"fp16 largest subnormal", FP16Float32, 0x03FF, 1023 * 0x1p-24},
		{"fp16 -Inf", FP16Float32, 0xFC00, float32(math.Inf(-1))},
		{"bf16 one", BF16Float32, 0x3F80, 1},
		{"bf16 max", BF16Float32, 0x7F7F, 0x1.FEp127},
		{"bf16 smallest subnormal", BF16Float32, 0x0001, 0x1p-133},
		{"bf16 +Inf", BF16Float32, 0x7F80, float32(math.Inf(1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f(tt.in); got != tt.want {
				t.Errorf("got %g, want %g", got, tt.want)
			}
		})
	}
	for _, nan := range []uint16{0x7E00, 0x7C01, 0xFE00} {
		if f := FP16Float32(nan); !math.IsNaN(float64(f)) {
			t.Errorf("FP16Float32(%#04x) = %g, want NaN", nan, f)
		}
	}
	if f := BF16Float32(0x7FC0); !math.IsNaN(float64(f)) {
		t.Errorf("BF16Float32(0x7FC0) = %g, want NaN", f)
	}
}

// Every half-precision value is exact in float32, so converting it to
// float32 and back must give the same bits; NaNs must stay NaNs.
func TestHalfRoundTripExhaustive(t *testing.T) {
	for h := 0; h <= 0xFFFF; h++ {
		b := uint16(h)
		if got := FP16Bits(FP16Float32(b)); got != b {
			isNaN := b&0x7C00 == 0x7C00 && b&0x03FF != 0
			if !isNaN || got&0x7C00 != 0x7C00 || got&0x03FF == 0 {
				t.Fatalf("FP16 %#04x -> %g -> %#04x", b, FP16Float32(b), got)
			}
		}
		if got := BF16Bits(BF16Float32(b)); got != b {
			isNaN := b&0x7F80 == 0x7F80 && b&0x007F != 0
			if !isNaN || got != b|0x0040 {
				t.Fatalf("BF16 %#04x -> %g -> %#04x", b, BF16Float32(b), got)
			}
		}
	}
}
