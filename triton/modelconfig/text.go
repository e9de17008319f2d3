package modelconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// token is one token of the text format, with its place in the text.
type token struct {
	kind       byte // 'i' identifier or number, 's' string, or the punctuation itself
	text       string
	start, end int // byte offsets
}

// tokenize splits the text format into tokens, leaving out whitespace and
// comments.
func tokenize(src []byte) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.IndexByte("{}[]<>:,;", c) >= 0:
			toks = append(toks, token{kind: c, text: string(c), start: i, end: i + 1})
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				if src[j] == '\n' {
					return nil, fmt.Errorf("line %d: newline in a string", line(src, i))
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line(src, i))
			}
			toks = append(toks, token{kind: 's', text: string(src[i : j+1]), start: i, end: j + 1})
			i = j + 1
		default:
			j := i
			for j < len(src) && (isWord(src[j]) || (src[j] == '-' && j == i) || ((src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("line %d: unexpected %q", line(src, i), c)
			}
			toks = append(toks, token{kind: 'i', text: string(src[i:j]), start: i, end: j})
			i = j
		}
	}
	return toks, nil
}

func isWord(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// line returns the line number of offset i.
func line(src []byte, i int) int { return strings.Count(string(src[:i]), "\n") + 1 }

// node is a field of a message in the text: a scalar, a message, or a
// list of either.
type node struct {
	name   token
	scalar *token  // a scalar value
	msg    *msg    // a message value
	list   []value // a list value
	open   token   // the list's '[' (list values)
	close  token   // the list's ']' (list values)
}

// value is one element of a list: a scalar or a message.
type value struct {
	scalar *token
	msg    *msg
}

// msg is a message: its fields, between its open and close tokens (none
// for the top level).
type msg struct {
	fields      []*node
	open, close token
}

// parser builds the tree of the text's tokens.
type parser struct {
	src  []byte
	toks []token
	pos  int
}

// parseText parses the text format into its tree.
func parseText(src []byte) (*msg, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	m := &msg{}
	if err := p.fields(m, 0); err != nil {
		return nil, err
	}
	return m, nil
}

func (p *parser) peek() *token {
	if p.pos < len(p.toks) {
		return &p.toks[p.pos]
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	at := len(p.src)
	if t := p.peek(); t != nil {
		at = t.start
	}
	return fmt.Errorf("line %d: %s", line(p.src, at), fmt.Sprintf(format, args...))
}

// fields parses fields until the closing token end ('}' or '>'), or the
// end of the text when end is 0.
func (p *parser) fields(m *msg, end byte) error {
	for {
		t := p.peek()
		switch {
		case t == nil && end == 0:
			return nil
		case t == nil:
			return p.errorf("unclosed message")
		case t.kind == end:
			return nil
		case t.kind == ';' || t.kind == ',':
			p.pos++
			continue
		case t.kind != 'i':
			return p.errorf("want a field name, found %q", t.text)
		}
		n := &node{name: *t}
		p.pos++
		colon := false
		if t := p.peek(); t != nil && t.kind == ':' {
			colon = true
			p.pos++
		}
		t = p.peek()
		switch {
		case t == nil:
			return p.errorf("field %s has no value", n.name.text)
		case t.kind == '{' || t.kind == '<':
			m, err := p.message()
			if err != nil {
				return err
			}
			n.msg = m
		case t.kind == '[':
			n.open = *t
			p.pos++
			for {
				t := p.peek()
				if t == nil {
					return p.errorf("unclosed list")
				}
				if t.kind == ']' {
					n.close = *t
					p.pos++
					break
				}
				if t.kind == ',' {
					p.pos++
					continue
				}
				if t.kind == '{' || t.kind == '<' {
					m, err := p.message()
					if err != nil {
						return err
					}
					n.list = append(n.list, value{msg: m})
					continue
				}
				if !colon || (t.kind != 'i' && t.kind != 's') {
					return p.errorf("want a value in the list of %s, found %q", n.name.text, t.text)
				}
				s := *t
				n.list = append(n.list, value{scalar: &s})
				p.pos++
			}
		case (t.kind == 'i' || t.kind == 's') && colon:
			s := *t
			n.scalar = &s
			p.pos++
			for t := p.peek(); s.kind == 's' && t != nil && t.kind == 's'; t = p.peek() {
				p.pos++ // adjacent strings concatenate; the field keeps the first token
			}
		default:
			return p.errorf("want a value for %s, found %q", n.name.text, t.text)
		}
		m.fields = append(m.fields, n)
	}
}

// message parses a message from its opening token to its closing one.
func (p *parser) message() (*msg, error) {
	open := *p.peek()
	p.pos++
	end := byte('}')
	if open.kind == '<' {
		end = '>'
	}
	m := &msg{open: open}
	if err := p.fields(m, end); err != nil {
		return nil, err
	}
	m.close = *p.peek()
	p.pos++
	return m, nil
}

// messages returns the message values of the fields named name: each
// message field, and each message of a list.
func (m *msg) messages(name string) []*msg {
	var out []*msg
	for _, n := range m.fields {
		if n.name.text != name {
			continue
		}
		if n.msg != nil {
			out = append(out, n.msg)
		}
		for _, v := range n.list {
			if v.msg != nil {
				out = append(out, v.msg)
			}
		}
	}
	return out
}

// scalar returns the token of the first scalar field named name.
func (m *msg) scalar(name string) *token {
	for _, n := range m.fields {
		if n.name.text == name && n.scalar != nil {
			return n.scalar
		}
	}
	return nil
}

// unquote returns a string token's value.
func unquote(t *token) (string, bool) {
	if t == nil || t.kind != 's' {
		return "", false
	}
	q := t.text
	if q[0] == '\'' {
		q = `"` + strings.ReplaceAll(q[1:len(q)-1], `"`, `\"`) + `"`
	}
	s, err := strconv.Unquote(q)
	return s, err == nil
}
