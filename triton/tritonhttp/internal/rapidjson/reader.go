package rapidjson

import (
	"math"
	"strconv"
)

// rapidjson's messages (GetParseError_En) for the errors its reader raises
// without special flags.
const (
	errDocumentEmpty     = "The document is empty."
	errRootNotSingular   = "The document root must not be followed by other values."
	errValueInvalid      = "Invalid value."
	errObjectMissName    = "Missing a name for object member."
	errObjectMissColon   = "Missing a colon after a name of object member."
	errObjectMissComma   = "Missing a comma or '}' after an object member."
	errArrayMissComma    = "Missing a comma or ']' after an array element."
	errUnicodeEscapeHex  = "Incorrect hex digit after \\u escape in string."
	errSurrogateInvalid  = "The surrogate pair in string is invalid."
	errEscapeInvalid     = "Invalid escape character in string."
	errMissQuotationMark = "Missing a closing quotation mark in string."
	// MsgNumberTooBig is the message of a number out of float64's range.
	MsgNumberTooBig       = "Number too big to be stored in double."
	errNumberMissFraction = "Miss fraction part in number."
	errNumberMissExponent = "Miss exponent in number."
)

// Check reads buf as rapidjson's reader does, NaN and Inf allowed, and
// returns rapidjson's message and offset for the first error ("" when the
// document parses), and the deepest nesting it read.
func Check(buf []byte) (msg string, offset, depth int) {
	r := &rapidReader{buf: buf}
	msg, offset = r.parse()
	return msg, offset, r.depth
}

// rapidReader is rapidjson's GenericReader over a memory stream, reduced
// to syntax.
type rapidReader struct {
	buf   []byte
	pos   int
	depth int // the deepest nesting read
}

// peek is the stream's Peek: the next byte, NUL at the end.
func (r *rapidReader) peek() byte {
	if r.pos >= len(r.buf) {
		return 0
	}
	return r.buf[r.pos]
}

// consume takes c if it is next.
func (r *rapidReader) consume(c byte) bool {
	if r.peek() == c && c != 0 {
		r.pos++
		return true
	}
	return false
}

func (r *rapidReader) skipSpace() {
	for {
		switch r.peek() {
		case ' ', '\n', '\r', '\t':
			r.pos++
		default:
			return
		}
	}
}

// parse checks the whole document and returns rapidjson's message and
// offset, or "" when it parses.
func (r *rapidReader) parse() (string, int) {
	r.skipSpace()
	if r.peek() == 0 {
		return errDocumentEmpty, r.pos
	}
	if msg, at := r.value(); msg != "" {
		return msg, at
	}
	r.skipSpace()
	if r.peek() != 0 {
		return errRootNotSingular, r.pos
	}
	return "", 0
}

// Containers on the reader's stack.
const (
	inObject = iota + 1
	inArray
)

// value checks one value, iteratively over nested objects and arrays.
func (r *rapidReader) value() (string, int) {
	var stack []byte
	for {
		// Read one value; a container is opened and its first member or
		// element is read on the next turn.
		switch c := r.peek(); c {
		case '{':
			r.pos++
			r.skipSpace()
			if r.consume('}') {
				break
			}
			stack = append(stack, inObject)
			r.depth = max(r.depth, len(stack))
			if msg, at := r.memberName(); msg != "" {
				return msg, at
			}
			continue
		case '[':
			r.pos++
			r.skipSpace()
			if r.consume(']') {
				break
			}
			stack = append(stack, inArray)
			r.depth = max(r.depth, len(stack))
			continue
		case 'n', 't', 'f':
			if msg, at := r.literal(); msg != "" {
				return msg, at
			}
		case '"':
			if msg, at := r.str(); msg != "" {
				return msg, at
			}
		default:
			if msg, at := r.number(); msg != "" {
				return msg, at
			}
		}
		// A value ended: close the containers it completes.
		for {
			if len(stack) == 0 {
				return "", 0
			}
			r.skipSpace()
			if stack[len(stack)-1] == inObject {
				switch r.peek() {
				case ',':
					r.pos++
					r.skipSpace()
					if msg, at := r.memberName(); msg != "" {
						return msg, at
					}
				case '}':
					r.pos++
					stack = stack[:len(stack)-1]
					continue
				default:
					return errObjectMissComma, r.pos
				}
			} else {
				switch {
				case r.consume(','):
					r.skipSpace()
				case r.consume(']'):
					stack = stack[:len(stack)-1]
					continue
				default:
					return errArrayMissComma, r.pos
				}
			}
			break // the next value of the innermost container
		}
	}
}

// memberName reads an object member's name and the colon after it.
func (r *rapidReader) memberName() (string, int) {
	if r.peek() != '"' {
		return errObjectMissName, r.pos
	}
	if msg, at := r.str(); msg != "" {
		return msg, at
	}
	r.skipSpace()
	if !r.consume(':') {
		return errObjectMissColon, r.pos
	}
	r.skipSpace()
	return "", 0
}

// literal reads null, true or false: rapidjson takes the first byte, then
// consumes the others one by one and reports the first that differs.
func (r *rapidReader) literal() (string, int) {
	word := map[byte]string{'n': "null", 't': "true", 'f': "false"}[r.peek()]
	r.pos++
	for i := 1; i < len(word); i++ {
		if !r.consume(word[i]) {
			return errValueInvalid, r.pos
		}
	}
	return "", 0
}

// str reads a string.
func (r *rapidReader) str() (string, int) {
	r.pos++ // the opening quotation mark
	for {
		c := r.peek()
		switch {
		case c == '\\':
			escape := r.pos
			r.pos++
			switch e := r.peek(); e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.pos++
			case 'u':
				r.pos++
				cp, ok := r.hex4()
				if !ok {
					return errUnicodeEscapeHex, escape
				}
				switch {
				case cp >= 0xD800 && cp <= 0xDBFF:
					if !(r.consume('\\') && r.consume('u')) {
						return errSurrogateInvalid, escape
					}
					lo, ok := r.hex4()
					if !ok {
						return errUnicodeEscapeHex, escape
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return errSurrogateInvalid, escape
					}
				}
				// A low surrogate alone passes: the rapidjson Triton 2.51
				// is built with checks only for high ones.
			default:
				return errEscapeInvalid, escape
			}
		case c == '"':
			r.pos++
			return "", 0
		case c == 0:
			return errMissQuotationMark, r.pos
		case c < 0x20:
			// Newer rapidjson says errInvalidEncoding; Triton's says this.
			return errEscapeInvalid, r.pos
		default:
			r.pos++
		}
	}
}

// hex4 reads the four hexadecimal digits of a \u escape.
func (r *rapidReader) hex4() (uint16, bool) {
	var v uint16
	for range 4 {
		c := r.peek()
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
		r.pos++
	}
	return v, true
}

// number reads a number, or NaN, Inf or Infinity after an optional minus.
// A number whose value overflows a double is too big, reported at its
// start, as rapidjson does.
func (r *rapidReader) number() (string, int) {
	start := r.pos
	r.consume('-')
	digits := func() bool {
		at := r.pos
		for c := r.peek(); c >= '0' && c <= '9'; c = r.peek() {
			r.pos++
		}
		return r.pos > at
	}
	special := false // NaN or Inf: no overflow
	switch c := r.peek(); {
	case c == '0':
		r.pos++
	case c >= '1' && c <= '9':
		digits()
	case c == 'N':
		r.pos++
		if !(r.consume('a') && r.consume('N')) {
			return errValueInvalid, r.pos
		}
		special = true
	case c == 'I':
		r.pos++
		if !(r.consume('n') && r.consume('f')) {
			return errValueInvalid, r.pos
		}
		if r.peek() == 'i' {
			for _, b := range []byte("inity") {
				if !r.consume(b) {
					return errValueInvalid, r.pos
				}
			}
		}
		special = true
	default:
		return errValueInvalid, r.pos
	}
	if r.consume('.') {
		if !digits() {
			return errNumberMissFraction, r.pos
		}
	}
	if r.consume('e') || r.consume('E') {
		if !r.consume('+') {
			r.consume('-')
		}
		if !digits() {
			return errNumberMissExponent, r.pos
		}
	}
	if special {
		return "", 0
	}
	if f, err := strconv.ParseFloat(string(r.buf[start:r.pos]), 64); err != nil && math.IsInf(f, 0) {
		return MsgNumberTooBig, start
	}
	return "", 0
}
