package feedback

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/mergectl/react-triton/problem"
)

// MaxBodyBytes bounds the JSON body of a feedback: the HTTP handler reads
// at most this many bytes (http.MaxBytesReader) and ParseRequest refuses
// a longer body.
const MaxBodyBytes = 64 << 10

// ParseRequest reads the JSON body of POST /v2/models/{model}/feedback:
//
//	{"id": "42", "label": 3}
//	{"id": "42", "label": 3, "output": "fashion_logits"}
//	{"id": "42", "reward": 0.7}
//
// id is the request's id (a string); label the true class index (an
// integer ≥ 0; a number with an integral value, such as 3.0, is taken);
// output the output the label is for (optional where the request has one
// output with a prediction); reward a number in [0, 1]. A key given null
// is left out. Every problem is reported at once, as a problem.List with
// the keys as paths; the Feedback returned holds what did parse (its ID
// names the request in an error).
func ParseRequest(body []byte) (Feedback, error) {
	var f Feedback
	var p problem.List
	if len(body) > MaxBodyBytes {
		p.Add("", "the body has %d bytes, more than %d", len(body), MaxBodyBytes)
		return f, p
	}
	fields, err := fieldsOf(body)
	if err != nil {
		p.Add("", "%v", err)
		return f, p
	}
	var id, label, reward bool
	for _, fd := range fields {
		if fd.dup {
			p.Add(fd.key, "given twice")
			continue
		}
		if string(fd.raw) == "null" {
			continue
		}
		switch fd.key {
		case "id":
			id = true
			if err := json.Unmarshal(fd.raw, &f.ID); err != nil {
				p.Add("id", "want a string, got %s", describe(fd.raw))
			} else if f.ID == "" {
				p.Add("id", "empty: want the id of the request the outcome is about")
			}
		case "output":
			if err := json.Unmarshal(fd.raw, &f.Output); err != nil {
				p.Add("output", "want an output's name (a string), got %s", describe(fd.raw))
			}
		case "label":
			label = true
			c, ok := classIndex(fd.raw)
			if !ok {
				p.Add("label", "want a class index (an integer ≥ 0), got %s", describe(fd.raw))
			}
			f.Class = c
		case "reward":
			reward = true
			var x float64
			if err := json.Unmarshal(fd.raw, &x); err != nil || !(x >= 0 && x <= 1) {
				p.Add("reward", "want a number in [0, 1], got %s", describe(fd.raw))
			}
			f.Value = x
		default:
			p.Add(problem.Key("", fd.key), "unknown key (want id, label, reward, output)")
		}
	}
	switch {
	case label && reward:
		p.Add("", "both a label and a reward: give one")
	case label:
		f.Kind = Label
	case reward:
		f.Kind = Reward
	default:
		p.Add("", "want a label or a reward")
	}
	if !id {
		p.Add("id", "missing: the id of the request the outcome is about")
	}
	if f.Kind == Reward && f.Output != "" {
		p.Add("output", "names the output of a label; a reward is for the whole request")
	}
	return f, p.Err()
}

// field is one key of a JSON object, in order.
type field struct {
	key string
	raw json.RawMessage
	dup bool // the key came before
}

// fieldsOf splits a JSON object into its fields, keeping duplicates (which
// encoding/json would silently merge).
func fieldsOf(body []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed(dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var fields []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed(dec, err)
		}
		k := tok.(string) // a key: the decoder checks the syntax
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformed(dec, err)
		}
		fields = append(fields, field{key: k, raw: raw, dup: seen[k]})
		seen[k] = true
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, malformed(dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON: more after the object")
	}
	return fields, nil
}

// malformed describes a syntax error.
func malformed(dec *json.Decoder, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return errors.New("malformed JSON at byte " + strconv.FormatInt(dec.InputOffset(), 10) + ": " + err.Error())
}

// classIndex reads a class index: a JSON number with an integral value
// from 0 to 2⁵³.
func classIndex(raw json.RawMessage) (int64, bool) {
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil {
		return 0, false
	}
	if x < 0 || x > 1<<53 || x != math.Trunc(x) {
		return 0, false
	}
	return int64(x), true
}

// describe names a JSON value in a problem.
func describe(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}
