package layer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/mergectl/react-triton/internal/bytesize"
	"github.com/mergectl/react-triton/problem"
	"go.yaml.in/yaml/v3"
)

// The YAML file is decoded here rather than by viper: viper lower-cases
// every map key, also inside lists, which would change Triton tensor names
// ("OUTPUT__0") and preset names, and it cannot say on which line a key
// is. The decoder is strict: an unknown key or a value of the wrong type
// is a problem naming its path and line, and every such problem in the
// file is reported.

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[bytesize.Size]()
	timeType     = reflect.TypeFor[time.Time]()
)

// File is what a configuration file holds.
type File struct {
	abs   string              // the file's absolute path
	root  reflect.Value       // a pointer to the values, zero where the file has none (ReadFile)
	named map[string][]string // the values of named keys (ReadKeys), nil for ReadFile
	lines map[string]int      // line of every key and list item, by path
	set   map[string]bool     // paths of the values the file sets
}

// Path is the file's absolute path.
func (fv *File) Path() string { return fv.abs }

// Values returns a pointer to the values the file holds, of the type of
// ReadFile's root, zero where the file has none. It is for a file ReadFile
// read.
func (fv *File) Values() any { return fv.root.Interface() }

// newDecoder returns a decoder with nothing decoded yet.
func newDecoder() *decoder {
	return &decoder{File: File{lines: map[string]int{}, set: map[string]bool{}}}
}

// document decodes the one YAML document in data into v, recording the
// problems with keys and types. An empty file, or one with comments only,
// leaves v as it is. A syntax error, or a second document, is returned.
func (d *decoder) document(data []byte, v reflect.Value) error {
	doc, err := parse(data)
	if doc != nil {
		d.value(doc, v, "")
	}
	return err
}

// parse returns the one YAML document in data, nil for an empty file or
// one with comments only. A syntax error, or a second document, is an
// error.
func parse(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, problem.List{{Msg: "more than one YAML document (---): want one", Line: extra.Line}}
	}
	return &doc, nil
}

// decoder decodes YAML nodes into a configuration's types, recording
// problems.
type decoder struct {
	File
	errs problem.List
}

// fail records a problem with the value of node n at path.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &problem.Problem{Path: path, Msg: fmt.Sprintf(format, args...), Line: n.Line})
}

// value decodes n into v.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // leave the zero value: same as leaving the key out
	}
	switch v.Type() {
	case durationType:
		d.duration(n, v, path)
		return
	case byteSizeType:
		d.byteSize(n, v, path)
		return
	case timeType:
		d.time(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		d.list(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.value(n, p.Elem(), path)
		v.Set(p)
	case reflect.String:
		if d.scalar(n, path, "a string") {
			v.SetString(n.Value)
			d.set[path] = true
		}
	case reflect.Bool:
		var b bool
		if d.typed(n, path, "!!bool", "true or false", &b) {
			v.SetBool(b)
			d.set[path] = true
		}
	case reflect.Int:
		var i int
		if d.typed(n, path, "!!int", "an integer", &i) {
			v.SetInt(int64(i))
			d.set[path] = true
		}
	case reflect.Float64:
		var f float64
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
			// An integer is a number too: "beta: 1".
			if d.typed(n, path, "!!int", "a number", &f) {
				v.SetFloat(f)
				d.set[path] = true
			}
		} else if d.typed(n, path, "!!float", "a number", &f) {
			v.SetFloat(f)
			d.set[path] = true
		}
	default:
		panic(fmt.Sprintf("config: no decoding for %v at %s", v.Type(), path))
	}
}

// structure decodes a mapping into a struct, by the fields' yaml
// tags; keys are case-sensitive.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of keys, got %s", Describe(n))
		return
	}
	t := v.Type()
	fields := make(map[string]int, t.NumField())
	var known []string
	for i := range t.NumField() {
		if name := TagName(t.Field(i)); name != "" {
			fields[name] = i
			known = append(known, name)
		}
	}
	d.entries(n, path, func(key string, kn, vn *yaml.Node) {
		p := problem.Key(path, key)
		i, ok := fields[key]
		if !ok {
			if s := Suggest(key, known); s != "" {
				d.fail(kn, p, "unknown key, did you mean %q?", s)
			} else {
				d.fail(kn, p, "unknown key (want one of: %s)", strings.Join(known, ", "))
			}
			return
		}
		d.value(vn, v.Field(i), p)
	})
}

// mapping decodes a mapping into a map with string keys.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", Describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	d.entries(n, path, func(key string, _, vn *yaml.Node) {
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(vn, e, problem.Key(path, key))
		m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
	})
	v.Set(m)
}

// entries calls f for every key of a mapping, after checking that the key
// is a scalar and appears once, and recording its line.
func (d *decoder) entries(n *yaml.Node, path string, f func(key string, kn, vn *yaml.Node)) {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			d.fail(kn, path, "want a plain key, got %s", Describe(kn))
			continue
		}
		key := kn.Value
		p := problem.Key(path, key)
		if kn.ShortTag() == "!!merge" {
			d.fail(kn, p, "merge keys (<<) are not supported: write the keys out, or use an alias (*name) for a whole value")
			continue
		}
		if line, dup := first[key]; dup {
			d.fail(kn, p, "duplicate key, first on line %d", line)
			continue
		}
		first[key] = kn.Line
		d.lines[p] = kn.Line
		f(key, kn, vn)
	}
}

// list decodes a sequence into a slice.
func (d *decoder) list(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got %s", Describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		p := problem.Index(path, i)
		d.lines[p] = item.Line
		d.value(item, s.Index(i), p)
	}
	v.Set(s)
	d.set[path] = true
}

// scalar reports whether n is a scalar, recording a problem if not.
func (d *decoder) scalar(n *yaml.Node, path, want string) bool {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want %s, got %s", want, Describe(n))
		return false
	}
	return true
}

// typed decodes a scalar of YAML type tag into out, recording a problem
// when n is of another type or does not fit.
func (d *decoder) typed(n *yaml.Node, path, tag, want string, out any) bool {
	if !d.scalar(n, path, want) {
		return false
	}
	if n.ShortTag() != tag {
		d.fail(n, path, "want %s, got %s", want, Describe(n))
		return false
	}
	if err := n.Decode(out); err != nil {
		d.fail(n, path, "want %s, got %s (out of range)", want, Describe(n))
		return false
	}
	return true
}

// duration decodes a duration with a unit ("30s"), or 0.
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if !d.scalar(n, path, "a duration") {
		return
	}
	var (
		dur time.Duration
		err error
	)
	switch n.ShortTag() {
	case "!!str":
		dur, err = parseDuration(n.Value)
	case "!!int":
		if n.Value != "0" {
			err = fmt.Errorf("invalid duration %s: want a number with a unit (ns, us, ms, s, m, h), like \"30s\" or \"2m\"", n.Value)
		}
	default:
		err = fmt.Errorf("want a duration, like \"30s\" or \"2m\", got %s", Describe(n))
	}
	if err != nil {
		d.fail(n, path, "%v", err)
		return
	}
	v.SetInt(int64(dur))
	d.set[path] = true
}

// byteSize decodes an integer, or a string with a unit ("64MiB").
func (d *decoder) byteSize(n *yaml.Node, v reflect.Value, path string) {
	if !d.scalar(n, path, "a size") {
		return
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			d.fail(n, path, "size %s out of range", n.Value)
			return
		}
		v.SetInt(i)
	case "!!str":
		b, err := bytesize.Parse(n.Value)
		if err != nil {
			d.fail(n, path, "%v", err)
			return
		}
		v.SetInt(int64(b))
	default:
		d.fail(n, path, "want a size in bytes, like 67108864 or \"64MiB\", got %s", Describe(n))
		return
	}
	d.set[path] = true
}

// time decodes a point in time written in RFC 3339, with its offset:
// 2026-03-01T09:00:00Z, 2026-03-01T10:00:00+01:00.
func (d *decoder) time(n *yaml.Node, v reflect.Value, path string) {
	if !d.scalar(n, path, "a time") {
		return
	}
	t, err := time.Parse(time.RFC3339, n.Value)
	if err != nil || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
		d.fail(n, path, "want a time in RFC 3339 with its offset, like 2026-03-01T09:00:00Z, got %s", Describe(n))
		return
	}
	v.Set(reflect.ValueOf(t.UTC()))
	d.set[path] = true
}

// parseDuration parses a duration with a unit; "0" is allowed without.
func parseDuration(s string) (time.Duration, error) {
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit (ns, us, ms, s, m, h), like \"30s\" or \"2m\"", s)
	}
	return dur, nil
}

// Describe names the kind of value n holds, for "want X, got Y".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "string " + strconv.Quote(n.Value)
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return n.Value
		}
		return n.Value
	}
	return "a " + n.ShortTag() + " value"
}

// Suggest returns the known key closest to an unknown one: the same but for
// case, or at most two edits away. It returns "" when none is close.
func Suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if dist := editDistance(strings.ToLower(key), k); dist < bestDist && dist < len(k) {
			best, bestDist = k, dist
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes, each costing 1.
func editDistance(a, b string) int {
	// rows[0..2] are the rows i-2, i-1 and i of the dynamic programme.
	var rows [3][]int
	for r := range rows {
		rows[r] = make([]int, len(b)+1)
	}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur, prev, prev2 := rows[2], rows[1], rows[0]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, prev2
	}
	return rows[1][len(b)]
}
