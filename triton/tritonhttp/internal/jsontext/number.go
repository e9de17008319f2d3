package jsontext

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Float reads a number and returns its value rounded to the nearest
// float64. The common case, at most 15 significant digits and a decimal
// exponent within ±22, is computed here in one rounding (the mantissa and
// the power of ten are both exact in float64), which saves strconv's
// second pass over the digits; anything else goes through ParseFloat.
func (s *Scanner) Float() (float64, error) {
	b, i := s.buf, s.pos
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	var mant uint64
	sig, exp10 := 0, 0
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			sig++
		}
		mant = mant*10 + uint64(b[i]-'0')
		if sig > 15 {
			return s.slowFloat()
		}
	}
	if i == start || (i-start > 1 && b[start] == '0') {
		return s.slowFloat() // not a plain number: let number report it
	}
	if i < len(b) && b[i] == '.' {
		i++
		frac := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				sig++
			}
			mant = mant*10 + uint64(b[i]-'0')
			exp10--
			if sig > 15 || exp10 < -40 {
				return s.slowFloat()
			}
		}
		if i == frac {
			return s.slowFloat()
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := i < len(b) && b[i] == '-'
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			i++
		}
		e, digits := 0, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			e = e*10 + int(b[i]-'0')
			if digits++; digits > 3 {
				return s.slowFloat()
			}
		}
		if digits == 0 {
			return s.slowFloat()
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if exp10 < -22 || exp10 > 22 {
		return s.slowFloat()
	}
	f := float64(mant)
	if exp10 < 0 {
		f /= pow10[-exp10]
	} else {
		f *= pow10[exp10]
	}
	if neg {
		f = -f
	}
	s.pos = i
	return f, nil
}

// slowFloat reads a number with number and ParseFloat.
func (s *Scanner) slowFloat() (float64, error) {
	tok, kind, err := s.Number()
	if err != nil {
		return 0, err
	}
	f, err := ParseFloat(tok, kind)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", tok, err)
	}
	return f, nil
}

// ParseInt returns the value of an integer token within [lo, hi].
func ParseInt(tok []byte, kind NumKind, lo, hi int64) (int64, bool) {
	if kind != NumInt {
		return 0, false
	}
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	u, ok := parseDigits(tok)
	if !ok {
		return 0, false
	}
	if neg {
		if u > uint64(-(lo+1))+1 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > uint64(hi) {
		return 0, false
	}
	return int64(u), true
}

// parseUint returns the value of a non-negative integer token; "-0" is 0.
func parseUint(tok []byte, kind NumKind) (uint64, bool) {
	if kind != NumInt {
		return 0, false
	}
	if tok[0] == '-' {
		return 0, string(tok) == "-0"
	}
	return parseDigits(tok)
}

// parseDigits parses decimal digits into a uint64, failing on overflow.
func parseDigits(d []byte) (uint64, bool) {
	var u uint64
	for _, c := range d {
		if u > (math.MaxUint64-9)/10 && (u > math.MaxUint64/10 || uint64(c-'0') > math.MaxUint64-u*10) {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

// errFloatRange reports a number beyond the range of float64, which
// Triton's parser refuses too.
var errFloatRange = errors.New("number out of range of float64")

// ParseFloat returns the float64 value of a number token, rounding to
// nearest as Triton's parser does.
func ParseFloat(tok []byte, kind NumKind) (float64, error) {
	if kind == NumSpecial {
		neg := tok[0] == '-'
		if neg {
			tok = tok[1:]
		}
		if tok[0] == 'N' {
			return math.NaN(), nil
		}
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, errFloatRange // the syntax was checked: only the range can fail
	}
	return f, nil
}
