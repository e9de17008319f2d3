package tritonhttp

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of objects and arrays the scanner
// accepts. A request header nests at most four levels around a tensor's
// data, so this leaves room for any tensor rank in use while keeping a
// hostile body from driving a recursive skip deep.
const maxDepth = 64

// scanner reads one JSON document from buf, value by value, without
// building a tree. It accepts what Triton's parser (rapidjson with NaN and
// Inf parsing enabled) accepts: standard JSON, plus the number tokens NaN,
// Inf and Infinity, each with an optional minus sign. Strings may hold any
// byte from 0x20 up, invalid UTF-8 included, and escapes (\uXXXX with
// surrogate pairs) are decoded.
type scanner struct {
	buf   []byte
	pos   int
	depth int
	tmp   []byte // scratch for decoded strings with escapes
}

// numKind classifies a number token.
type numKind uint8

const (
	numInt     numKind = iota // -?digits: an integer literal
	numFloat                  // with a fraction or an exponent
	numSpecial                // NaN, Inf or Infinity, with an optional minus sign
)

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf(format+" at offset %d", append(args, s.pos)...)
}

// skipSpace skips JSON whitespace.
func (s *scanner) skipSpace() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return 0, s.errorf("unexpected end of JSON")
	}
	return s.buf[s.pos], nil
}

// end checks that nothing but whitespace is left.
func (s *scanner) end() error {
	s.skipSpace()
	if s.pos != len(s.buf) {
		return s.errorf("unexpected %s after the JSON value", quoteByte(s.buf[s.pos]))
	}
	return nil
}

// enter consumes the opening byte c of an object or array.
func (s *scanner) enter(c byte, what string) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.errorf("want %s, got %s", what, kindName(got))
	}
	if s.depth >= maxDepth {
		return s.errorf("JSON nested deeper than %d levels", maxDepth)
	}
	s.depth++
	s.pos++
	return nil
}

// beginObject consumes '{'.
func (s *scanner) beginObject() error { return s.enter('{', "an object") }

// beginArray consumes '['.
func (s *scanner) beginArray() error { return s.enter('[', "an array") }

// member advances to the next member of the current object and returns its
// key, or ok false after consuming the closing '}'. n counts the members
// read so far; the caller starts it at 0. The key is valid until the next
// call that reads a string.
func (s *scanner) member(n *int) (key []byte, ok bool, err error) {
	c, err := s.peek()
	if err != nil {
		return nil, false, err
	}
	if c == '}' {
		s.pos++
		s.depth--
		return nil, false, nil
	}
	if *n > 0 {
		if c != ',' {
			return nil, false, s.errorf("want ',' or '}', got %s", quoteByte(c))
		}
		s.pos++
		if c, err = s.peek(); err != nil {
			return nil, false, err
		}
	}
	if c != '"' {
		return nil, false, s.errorf("want a string key, got %s", kindName(c))
	}
	if key, err = s.str(); err != nil {
		return nil, false, err
	}
	if c, err = s.peek(); err != nil {
		return nil, false, err
	}
	if c != ':' {
		return nil, false, s.errorf("want ':', got %s", quoteByte(c))
	}
	s.pos++
	*n++
	return key, true, nil
}

// element advances to the next element of the current array, or returns
// ok false after consuming the closing ']'. n counts the elements read so
// far; the caller starts it at 0.
func (s *scanner) element(n *int) (ok bool, err error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if *n > 0 {
		if c != ',' {
			return false, s.errorf("want ',' or ']', got %s", quoteByte(c))
		}
		s.pos++
		if c, err = s.peek(); err != nil {
			return false, err
		}
		if c == ']' {
			return false, s.errorf("want a value, got ']'")
		}
	}
	*n++
	return true, nil
}

// str reads a string and returns its decoded bytes. They alias buf when the
// string has no escapes, else a scratch buffer reused by the next call.
func (s *scanner) str() ([]byte, error) {
	if c, err := s.peek(); err != nil {
		return nil, err
	} else if c != '"' {
		return nil, s.errorf("want a string, got %s", kindName(c))
	}
	start := s.pos + 1
	for i := start; i < len(s.buf); i++ {
		switch c := s.buf[i]; {
		case c == '"':
			s.pos = i + 1
			return s.buf[start:i], nil
		case c == '\\' || c < 0x20:
			var err error
			s.tmp, err = s.appendStr(s.tmp[:0])
			return s.tmp, err
		}
	}
	s.pos = len(s.buf)
	return nil, s.errorf("unterminated string")
}

// appendStr reads a string and appends its decoded bytes to dst.
func (s *scanner) appendStr(dst []byte) ([]byte, error) {
	if c, err := s.peek(); err != nil {
		return dst, err
	} else if c != '"' {
		return dst, s.errorf("want a string, got %s", kindName(c))
	}
	s.pos++
	for {
		i := s.pos
		for i < len(s.buf) && s.buf[i] != '"' && s.buf[i] != '\\' && s.buf[i] >= 0x20 {
			i++
		}
		dst = append(dst, s.buf[s.pos:i]...)
		s.pos = i
		if i >= len(s.buf) {
			return dst, s.errorf("unterminated string")
		}
		switch c := s.buf[i]; {
		case c == '"':
			s.pos++
			return dst, nil
		case c < 0x20:
			return dst, s.errorf("control character %s in string", quoteByte(c))
		}
		// A backslash.
		if i+1 >= len(s.buf) {
			s.pos = len(s.buf)
			return dst, s.errorf("unterminated string")
		}
		var b byte
		switch s.buf[i+1] {
		case '"', '\\', '/':
			b = s.buf[i+1]
		case 'b':
			b = '\b'
		case 'f':
			b = '\f'
		case 'n':
			b = '\n'
		case 'r':
			b = '\r'
		case 't':
			b = '\t'
		case 'u':
			r, n, err := s.unicodeEscape(i)
			if err != nil {
				return dst, err
			}
			dst = utf8.AppendRune(dst, r)
			s.pos = i + n
			continue
		default:
			s.pos = i
			return dst, s.errorf("invalid escape %s in string", quoteByte(s.buf[i+1]))
		}
		dst = append(dst, b)
		s.pos = i + 2
	}
}

// unicodeEscape decodes the \uXXXX escape at buf[i:], and the low
// surrogate escape that must follow a high surrogate. It returns the code
// point and the number of bytes read.
func (s *scanner) unicodeEscape(i int) (rune, int, error) {
	hi, ok := hex4(s.buf, i+2)
	if !ok {
		s.pos = i
		return 0, 0, s.errorf("invalid \\u escape in string")
	}
	switch {
	case hi < 0xD800 || hi > 0xDFFF:
		return rune(hi), 6, nil
	case hi <= 0xDBFF: // high surrogate: a low one must follow
		if i+7 < len(s.buf) && s.buf[i+6] == '\\' && s.buf[i+7] == 'u' {
			if lo, ok := hex4(s.buf, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (rune(hi)-0xD800)<<10 + rune(lo) - 0xDC00, 12, nil
			}
		}
	}
	s.pos = i
	return 0, 0, s.errorf("invalid surrogate pair in string")
}

// hex4 decodes the 4 hexadecimal digits at b[i:].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}

// number reads a number token and returns its bytes and kind.
func (s *scanner) number() ([]byte, numKind, error) {
	if _, err := s.peek(); err != nil {
		return nil, 0, err
	}
	b, start := s.buf, s.pos
	i := start
	if b[i] == '-' {
		i++
	}
	if i < len(b) && (b[i] == 'N' || b[i] == 'I') {
		for _, word := range [...]string{"NaN", "Infinity", "Inf"} {
			if hasPrefixAt(b, i, word) {
				s.pos = i + len(word)
				return b[start:s.pos], numSpecial, nil
			}
		}
		s.pos = i
		return nil, 0, s.errorf("invalid value")
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	kind := numInt
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.pos = i
		return nil, 0, s.errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		kind = numFloat
		if !digits() {
			s.pos = i
			return nil, 0, s.errorf("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		kind = numFloat
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.pos = i
			return nil, 0, s.errorf("invalid number: no digits in the exponent")
		}
	}
	s.pos = i
	return b[start:i], kind, nil
}

func hasPrefixAt(b []byte, i int, p string) bool {
	return len(b)-i >= len(p) && string(b[i:i+len(p)]) == p
}

// literal reads true, false or null and returns its first byte.
func (s *scanner) literal() (byte, error) {
	c, err := s.peek()
	if err != nil {
		return 0, err
	}
	for _, word := range [...]string{"true", "false", "null"} {
		if word[0] == c && hasPrefixAt(s.buf, s.pos, word) {
			s.pos += len(word)
			return c, nil
		}
	}
	return 0, s.errorf("invalid value")
}

// boolean reads true or false.
func (s *scanner) boolean() (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c != 't' && c != 'f' {
		return false, s.errorf("want true or false, got %s", kindName(c))
	}
	c, err = s.literal()
	if err != nil {
		return false, err
	}
	if c == 'n' {
		s.pos -= len("null")
		return false, s.errorf("want true or false, got null")
	}
	return c == 't', nil
}

// uint reads a non-negative integer literal.
func (s *scanner) uint() (uint64, error) {
	c, err := s.peek()
	if err != nil {
		return 0, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.errorf("want a non-negative integer, got %s", kindName(c))
	}
	at := s.pos
	tok, kind, err := s.number()
	if err != nil {
		return 0, err
	}
	v, ok := parseUint(tok, kind)
	if !ok {
		s.pos = at
		return 0, s.errorf("want a non-negative integer, got %s", tok)
	}
	return v, nil
}

// skipValue skips one value of any kind.
func (s *scanner) skipValue() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '{':
		if err := s.beginObject(); err != nil {
			return err
		}
		n := 0
		for {
			_, ok, err := s.member(&n)
			if err != nil || !ok {
				return err
			}
			if err := s.skipValue(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.beginArray(); err != nil {
			return err
		}
		n := 0
		for {
			ok, err := s.element(&n)
			if err != nil || !ok {
				return err
			}
			if err := s.skipValue(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'):
		_, _, err := s.number()
		return err
	default:
		_, err := s.literal()
		return err
	}
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float reads a number and returns its value rounded to the nearest
// float64. The common case, at most 15 significant digits and a decimal
// exponent within ±22, is computed here in one rounding (the mantissa and
// the power of ten are both exact in float64), which saves strconv's
// second pass over the digits; anything else goes through parseFloat.
func (s *scanner) float() (float64, error) {
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

// slowFloat reads a number with number and parseFloat.
func (s *scanner) slowFloat() (float64, error) {
	tok, kind, err := s.number()
	if err != nil {
		return 0, err
	}
	f, err := parseFloat(tok, kind)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", tok, err)
	}
	return f, nil
}

// parseInt returns the value of an integer token within [lo, hi].
func parseInt(tok []byte, kind numKind, lo, hi int64) (int64, bool) {
	if kind != numInt {
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
func parseUint(tok []byte, kind numKind) (uint64, bool) {
	if kind != numInt {
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

// parseFloat returns the float64 value of a number token, rounding to
// nearest as Triton's parser does.
func parseFloat(tok []byte, kind numKind) (float64, error) {
	if kind == numSpecial {
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

// kindName names the JSON value that starts with c, for messages.
func kindName(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return quoteByte(c)
}

// quoteByte formats a byte for messages: 'x', or its code when it is not
// printable ASCII.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte 0x%02x", c)
}
