package jsontext

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays the Scanner
// accepts. A request header nests at most four levels around a tensor's
// data, so this leaves room for any tensor rank in use while keeping a
// hostile body from driving a recursive skip deep.
const MaxDepth = 64

// Scanner reads one JSON document from buf, value by value, without
// building a tree. It accepts what Triton's parser (rapidjson with NaN and
// Inf parsing enabled) accepts: standard JSON, plus the number tokens NaN,
// Inf and Infinity, each with an optional minus sign. Strings may hold any
// byte from 0x20 up, invalid UTF-8 included, and escapes (\uXXXX with
// surrogate pairs) are decoded.
type Scanner struct {
	buf   []byte
	pos   int
	depth int
	tmp   []byte // scratch for decoded strings with escapes
	// tooDeep records that the document nests deeper than MaxDepth.
	tooDeep bool
	// ctx, when not nil, stops the scan once it ends; steps counts the
	// members and elements read, to look at ctx every cancelEvery steps.
	ctx   context.Context
	steps int
}

// New returns a scanner of the JSON document buf.
func New(buf []byte) *Scanner { return &Scanner{buf: buf} }

// NewContext returns a scanner of buf that stops, with ctx's error, once
// ctx ends: it looks every few thousand members and elements.
func NewContext(ctx context.Context, buf []byte) *Scanner { return &Scanner{buf: buf, ctx: ctx} }

// Fork returns a scanner of the same document at offset pos, one level
// deeper than s is now, with s's context: to read later a value that s
// skipped.
func (s *Scanner) Fork(pos int) *Scanner {
	return &Scanner{buf: s.buf, pos: pos, depth: s.depth + 1, ctx: s.ctx}
}

// Pos is the scanner's offset in the document.
func (s *Scanner) Pos() int { return s.pos }

// TooDeep reports whether the document nested deeper than MaxDepth where
// the scanner read it.
func (s *Scanner) TooDeep() bool { return s.tooDeep }

// cancelEvery is how many members and elements the Scanner reads between
// two looks at its context: a few tens of microseconds of work.
const cancelEvery = 1 << 12

// step counts one member or element, and fails once the Scanner's context
// has ended.
func (s *Scanner) step() error {
	s.steps++
	if s.ctx != nil && s.steps%cancelEvery == 0 {
		return s.ctx.Err()
	}
	return nil
}

// NumKind classifies a number token.
type NumKind uint8

const (
	NumInt     NumKind = iota // -?digits: an integer literal
	NumFloat                  // with a fraction or an exponent
	NumSpecial                // NaN, Inf or Infinity, with an optional minus sign
)

// Errorf returns an error at the scanner's offset.
func (s *Scanner) Errorf(format string, args ...any) error {
	return fmt.Errorf(format+" at offset %d", append(args, s.pos)...)
}

// skipSpace skips JSON whitespace.
func (s *Scanner) skipSpace() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte without consuming it.
func (s *Scanner) Peek() (byte, error) {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return 0, s.Errorf("unexpected end of JSON")
	}
	return s.buf[s.pos], nil
}

// End checks that nothing but whitespace is left.
func (s *Scanner) End() error {
	s.skipSpace()
	if s.pos != len(s.buf) && s.buf[s.pos] != 0 {
		return s.Errorf("unexpected %s after the JSON value", quoteByte(s.buf[s.pos]))
	}
	return nil
}

// enter consumes the opening byte c of an object or array.
func (s *Scanner) enter(c byte, what string) error {
	got, err := s.Peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.Errorf("want %s, got %s", what, KindName(got))
	}
	if s.depth >= MaxDepth {
		s.tooDeep = true
		return s.Errorf("JSON nested deeper than %d levels", MaxDepth)
	}
	s.depth++
	s.pos++
	return nil
}

// BeginObject consumes '{'.
func (s *Scanner) BeginObject() error { return s.enter('{', "an object") }

// BeginArray consumes '['.
func (s *Scanner) BeginArray() error { return s.enter('[', "an array") }

// Member advances to the next member of the current object and returns its
// key, or ok false after consuming the closing '}'. n counts the members
// read so far; the caller starts it at 0. The key is valid until the next
// call that reads a string.
func (s *Scanner) Member(n *int) (key []byte, ok bool, err error) {
	if err := s.step(); err != nil {
		return nil, false, err
	}
	c, err := s.Peek()
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
			return nil, false, s.Errorf("want ',' or '}', got %s", quoteByte(c))
		}
		s.pos++
		if c, err = s.Peek(); err != nil {
			return nil, false, err
		}
	}
	if c != '"' {
		return nil, false, s.Errorf("want a string key, got %s", KindName(c))
	}
	if key, err = s.Str(); err != nil {
		return nil, false, err
	}
	if c, err = s.Peek(); err != nil {
		return nil, false, err
	}
	if c != ':' {
		return nil, false, s.Errorf("want ':', got %s", quoteByte(c))
	}
	s.pos++
	*n++
	return key, true, nil
}

// Element advances to the next element of the current array, or returns
// ok false after consuming the closing ']'. n counts the elements read so
// far; the caller starts it at 0.
func (s *Scanner) Element(n *int) (ok bool, err error) {
	if err := s.step(); err != nil {
		return false, err
	}
	c, err := s.Peek()
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
			return false, s.Errorf("want ',' or ']', got %s", quoteByte(c))
		}
		s.pos++
		if c, err = s.Peek(); err != nil {
			return false, err
		}
		if c == ']' {
			return false, s.Errorf("want a value, got ']'")
		}
	}
	*n++
	return true, nil
}

// Str reads a string and returns its decoded bytes. They alias buf when the
// string has no escapes, else a scratch buffer reused by the next call.
func (s *Scanner) Str() ([]byte, error) {
	if c, err := s.Peek(); err != nil {
		return nil, err
	} else if c != '"' {
		return nil, s.Errorf("want a string, got %s", KindName(c))
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
	return nil, s.Errorf("unterminated string")
}

// appendStr reads a string and appends its decoded bytes to dst.
func (s *Scanner) appendStr(dst []byte) ([]byte, error) {
	if c, err := s.Peek(); err != nil {
		return dst, err
	} else if c != '"' {
		return dst, s.Errorf("want a string, got %s", KindName(c))
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
			return dst, s.Errorf("unterminated string")
		}
		switch c := s.buf[i]; {
		case c == '"':
			s.pos++
			return dst, nil
		case c < 0x20:
			return dst, s.Errorf("control character %s in string", quoteByte(c))
		}
		// A backslash.
		if i+1 >= len(s.buf) {
			s.pos = len(s.buf)
			return dst, s.Errorf("unterminated string")
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
			return dst, s.Errorf("invalid escape %s in string", quoteByte(s.buf[i+1]))
		}
		dst = append(dst, b)
		s.pos = i + 2
	}
}

// unicodeEscape decodes the \uXXXX escape at buf[i:], and the low
// surrogate escape that must follow a high surrogate. It returns the code
// point and the number of bytes read.
func (s *Scanner) unicodeEscape(i int) (rune, int, error) {
	hi, ok := hex4(s.buf, i+2)
	if !ok {
		s.pos = i
		return 0, 0, s.Errorf("invalid \\u escape in string")
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
	return 0, 0, s.Errorf("invalid surrogate pair in string")
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

// Number reads a number token and returns its bytes and kind.
func (s *Scanner) Number() ([]byte, NumKind, error) {
	if _, err := s.Peek(); err != nil {
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
				return b[start:s.pos], NumSpecial, nil
			}
		}
		s.pos = i
		return nil, 0, s.Errorf("invalid value")
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	kind := NumInt
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.pos = i
		return nil, 0, s.Errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		kind = NumFloat
		if !digits() {
			s.pos = i
			return nil, 0, s.Errorf("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		kind = NumFloat
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.pos = i
			return nil, 0, s.Errorf("invalid number: no digits in the exponent")
		}
	}
	s.pos = i
	return b[start:i], kind, nil
}

func hasPrefixAt(b []byte, i int, p string) bool {
	return len(b)-i >= len(p) && string(b[i:i+len(p)]) == p
}

// literal reads true, false or null and returns its first byte.
func (s *Scanner) literal() (byte, error) {
	c, err := s.Peek()
	if err != nil {
		return 0, err
	}
	for _, word := range [...]string{"true", "false", "null"} {
		if word[0] == c && hasPrefixAt(s.buf, s.pos, word) {
			s.pos += len(word)
			return c, nil
		}
	}
	return 0, s.Errorf("invalid value")
}

// Boolean reads true or false.
func (s *Scanner) Boolean() (bool, error) {
	c, err := s.Peek()
	if err != nil {
		return false, err
	}
	if c != 't' && c != 'f' {
		return false, s.Errorf("want true or false, got %s", KindName(c))
	}
	c, err = s.literal()
	if err != nil {
		return false, err
	}
	if c == 'n' {
		s.pos -= len("null")
		return false, s.Errorf("want true or false, got null")
	}
	return c == 't', nil
}

// Uint reads a non-negative integer literal.
func (s *Scanner) Uint() (uint64, error) {
	c, err := s.Peek()
	if err != nil {
		return 0, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.Errorf("want a non-negative integer, got %s", KindName(c))
	}
	at := s.pos
	tok, kind, err := s.Number()
	if err != nil {
		return 0, err
	}
	v, ok := parseUint(tok, kind)
	if !ok {
		s.pos = at
		return 0, s.Errorf("want a non-negative integer, got %s", tok)
	}
	return v, nil
}

// SkipValue skips one value of any kind.
func (s *Scanner) SkipValue() error {
	c, err := s.Peek()
	if err != nil {
		return err
	}
	switch {
	case c == '{':
		if err := s.BeginObject(); err != nil {
			return err
		}
		n := 0
		for {
			_, ok, err := s.Member(&n)
			if err != nil || !ok {
				return err
			}
			if err := s.SkipValue(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.BeginArray(); err != nil {
			return err
		}
		n := 0
		for {
			ok, err := s.Element(&n)
			if err != nil || !ok {
				return err
			}
			if err := s.SkipValue(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := s.Str()
		return err
	case c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'):
		_, _, err := s.Number()
		return err
	default:
		_, err := s.literal()
		return err
	}
}

// KindName names the JSON value that starts with c, for messages.
func KindName(c byte) string {
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
