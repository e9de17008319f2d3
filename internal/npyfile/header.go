package npyfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// magic opens every .npy file.
const magic = "\x93NUMPY"

// maxHeaderLen bounds the header we accept; real ones are well under 1 KiB.
const maxHeaderLen = 1 << 20

// Header is the parsed header of a .npy file.
type Header struct {
	Major, Minor byte
	Descr        string // dtype descriptor, e.g. "<f4"
	Fortran      bool   // data in column-major order
	Shape        []int
	// DataOffset is the size of the preamble and header: where the data
	// starts.
	DataOffset int64
}

// ReadHeader reads and parses the header of a .npy file from r, leaving r at
// the start of the data.
func ReadHeader(r io.Reader) (Header, error) {
	var h Header
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, errors.New("not a .npy file: shorter than the 10-byte preamble")
	}
	if string(pre[:6]) != magic {
		return h, errors.New("not a .npy file: missing the \\x93NUMPY magic string")
	}
	h.Major, h.Minor = pre[6], pre[7]
	var n int64
	switch h.Major {
	case 1:
		n = int64(binary.LittleEndian.Uint16(pre[8:]))
		h.DataOffset = 10 + n
	case 2, 3:
		var more [2]byte
		if _, err := io.ReadFull(r, more[:]); err != nil {
			return h, errors.New("truncated .npy preamble")
		}
		n = int64(binary.LittleEndian.Uint32(append(pre[8:10:10], more[:]...)))
		h.DataOffset = 12 + n
	default:
		return h, fmt.Errorf("unsupported .npy format version %d.%d", h.Major, h.Minor)
	}
	if n > maxHeaderLen {
		return h, fmt.Errorf(".npy header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return h, fmt.Errorf("truncated .npy header: want %d bytes", n)
	}
	if err := parseDict(string(buf), &h); err != nil {
		return h, fmt.Errorf("invalid .npy header %q: %w", strings.TrimSpace(string(buf)), err)
	}
	return h, nil
}

// parseDict parses the Python dict literal of a header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseDict(s string, h *Header) error {
	p := &lexer{s: s}
	if !p.eat('{') {
		return errors.New("want '{'")
	}
	seen := make(map[string]bool)
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if !p.eat(':') {
			return fmt.Errorf("want ':' after %q", key)
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return errors.New("structured dtypes are not supported")
			}
			if h.Descr, err = p.str(); err != nil {
				return fmt.Errorf("descr: %w", err)
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				h.Fortran = true
			case p.word("False"):
				h.Fortran = false
			default:
				return errors.New("fortran_order: want True or False")
			}
		case "shape":
			if h.Shape, err = p.tuple(); err != nil {
				return fmt.Errorf("shape: %w", err)
			}
			if err := checkElements(h.Shape); err != nil {
				return fmt.Errorf("shape: %w", err)
			}
		default:
			return fmt.Errorf("unknown key %q", key)
		}
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return errors.New("want ',' or '}'")
		}
	}
	if rest := strings.TrimSpace(p.s[p.i:]); rest != "" {
		return errors.New("data after the dictionary")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
	}
	return nil
}

type lexer struct {
	s string
	i int
}

func (p *lexer) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\n\r", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *lexer) peek() byte {
	p.skip()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *lexer) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *lexer) word(w string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *lexer) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", errors.New("want a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

// maxDim is the largest dimension a header may give, and maxElements the
// largest number of elements its shape may describe: at 8 bytes each, a
// larger array could not be addressed by an int64 byte count.
const (
	maxDim      = 1 << 40
	maxElements = 1 << 59
)

// checkElements refuses a shape whose product of dimensions exceeds
// maxElements, saying so, instead of letting the product overflow.
func checkElements(shape []int) error {
	if slices.Contains(shape, 0) {
		return nil // no elements, however large the other dimensions
	}
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > maxElements {
			return fmt.Errorf("%v describes more than 2^59 elements (the product of the dimensions overflows)", shape)
		}
		n = lo
	}
	return nil
}

func (p *lexer) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("want '('")
	}
	dims := []int{}
	for {
		if p.eat(')') {
			return dims, nil
		}
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i {
			return nil, errors.New("want non-negative integer dimensions")
		}
		v, err := strconv.Atoi(p.s[p.i:j])
		if err != nil || v > maxDim {
			return nil, fmt.Errorf("dimension %s is too large (at most %d)", p.s[p.i:j], maxDim)
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		dims = append(dims, v)
		if p.eat(')') {
			return dims, nil
		}
		if !p.eat(',') {
			return nil, errors.New("want ',' or ')'")
		}
	}
}
