package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The JSON this package writes follows Triton's writer (rapidjson) byte for
// byte where it matters to clients: strings escape only '"', '\\' and
// control characters, passing other bytes through as they are; numbers that
// are floating-point always show a '.' or an exponent, so a reader can tell
// them from integers; NaN and infinities are written as the bare tokens NaN,
// Infinity and -Infinity.

const hexDigits = "0123456789ABCDEF"

// AppendString appends s as a JSON string. Bytes that are not valid UTF-8
// pass through unchanged, as Triton writes them, unless valid is set: then
// each becomes U+FFFD, so that the output is always valid JSON text.
func AppendString[T string | []byte](dst []byte, s T, valid bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && (c < utf8.RuneSelf || !valid) {
			i++
			continue
		}
		if c >= utf8.RuneSelf { // valid is set: check the sequence
			r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r != utf8.RuneError || n != 1 {
				i += n
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f, a float32 when bitSize is 32, with the fewest
// digits that read back to the same value at that size, laid out as
// Triton's writer lays out numbers: 5.0, 0.001, 1e-7, 1.5e21.
func AppendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest digits in exponent form: d.ddde±XX.
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, bitSize)
	var digits [24]byte
	nd := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[nd] = e[i]
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	d := digits[:nd]
	kk := exp + 1 // the value is 0.d × 10^kk
	k := kk - nd  // the value is d × 10^k
	switch {
	case k >= 0 && kk <= 21: // 1234e7 -> 12340000000.0
		dst = append(dst, d...)
		for range k {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	case kk > 0 && kk <= 21: // 1234e-2 -> 12.34
		dst = append(dst, d[:kk]...)
		dst = append(dst, '.')
		return append(dst, d[kk:]...)
	case kk > -6 && kk <= 0: // 1234e-6 -> 0.001234
		dst = append(dst, '0', '.')
		for range -kk {
			dst = append(dst, '0')
		}
		return append(dst, d...)
	case nd == 1: // 1e30
		dst = append(dst, d[0], 'e')
	default: // 1234e30 -> 1.234e33
		dst = append(dst, d[0], '.')
		dst = append(dst, d[1:]...)
		dst = append(dst, 'e')
	}
	return strconv.AppendInt(dst, int64(kk-1), 10)
}
