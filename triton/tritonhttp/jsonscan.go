package tritonhttp

import (
	"context"
	"fmt"
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
	// tooDeep records that the document nests deeper than maxDepth.
	tooDeep bool
	// ctx, when not nil, stops the scan once it ends; steps counts the
	// members and elements read, to look at ctx every cancelEvery steps.
	ctx   context.Context
	steps int
	// lim bounds the parameters of one object (the other limits are the
	// request's).
	lim Limits
}

// cancelEvery is how many members and elements the scanner reads between
// two looks at its context: a few tens of microseconds of work.
const cancelEvery = 1 << 12

// step counts one member or element, and fails once the scanner's context
// has ended.
func (s *scanner) step() error {
	s.steps++
	if s.ctx != nil && s.steps%cancelEvery == 0 {
		return s.ctx.Err()
	}
	return nil
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
	if s.pos != len(s.buf) && s.buf[s.pos] != 0 {
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
		s.tooDeep = true
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
	if err := s.step(); err != nil {
		return nil, false, err
	}
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
	if err := s.step(); err != nil {
		return false, err
	}
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
			if r >= 0xDC00 && r <= 0xDFFF {
				// rapidjson writes a lone surrogate's three UTF-8 bytes,
				// where utf8.AppendRune would write U+FFFD.
				dst = append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
			} else {
				dst = utf8.AppendRune(dst, r)
			}
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
	case hi < 0xD800 || hi > 0xDBFF:
		// A low surrogate alone is taken, as Triton's parser takes it.
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
