package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/config/layer"
)

// docKey matches a dotted key in backquotes, such as `admission.key_rate`
// or `models[i].backbone.model`.
var docKey = regexp.MustCompile("`([a-z_]+(?:\\[[^\\]`]*\\])?(?:\\.[a-z_0-9]+(?:\\[[^\\]`]*\\])?)+)`")

// fileName matches what is a file's name rather than a key (models.go,
// triton.h).
var fileName = regexp.MustCompile(`\.(go|h|c|md|py|yaml|yml|json|safetensors|npy)$`)

// schemaHas reports whether path names a key of typ's schema: each element
// a field's YAML name, descending into structs, and through slices,
// pointers and maps (a map's key is any one element).
func schemaHas(typ reflect.Type, path []string) bool {
	for len(path) > 0 {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case typ.Kind() == reflect.Map:
			typ, path = typ.Elem(), path[1:]
		case typ.Kind() == reflect.Struct && typ != reflect.TypeFor[time.Duration]():
			found := false
			for i := range typ.NumField() {
				if f := typ.Field(i); layer.TagName(f) == path[0] {
					typ, path, found = f.Type, path[1:], true
					break
				}
			}
			if !found {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// docKeyProblems returns a problem for every dotted key of text whose
// first element is a top-level key of Config but which the schema does not
// have.
func docKeyProblems(name, text string) []string {
	top := reflect.TypeFor[Config]()
	var bad []string
	for _, m := range docKey.FindAllStringSubmatch(text, -1) {
		key := m[1]
		if fileName.MatchString(key) {
			continue
		}
		var path []string
		for _, p := range strings.Split(key, ".") {
			p, _, _ = strings.Cut(p, "[")
			path = append(path, p)
		}
		if !schemaHas(top, path[:1]) {
			continue // not the sidecar's (a model parameter, a package)
		}
		if !schemaHas(top, path) {
			bad = append(bad, name+": `"+key+"` is no key of the sidecar's configuration")
		}
	}
	return bad
}

// yamlBlock matches a fenced YAML block of a Markdown file.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// yamlKeyProblems returns a problem for every key of the YAML blocks of
// text that are (parts of) the sidecar's configuration, a mapping whose
// keys are all top-level keys of Config, and that the schema does not
// have: the keys of its examples, nested lists and maps included. Blocks
// of another schema (Kubernetes, calibrate's), lists on their own and
// blocks that do not parse are left out.
func yamlKeyProblems(name, text string) []string {
	top := reflect.TypeFor[Config]()
	var bad []string
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := append(slices.Clone(path), n.Content[i].Value)
				if !schemaHas(top, p) {
					bad = append(bad, name+": the YAML key "+strings.Join(p, ".")+" is no key of the sidecar's configuration")
					continue
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for _, item := range n.Content {
				walk(item, path)
			}
		}
	}
	for _, m := range yamlBlock.FindAllStringSubmatch(text, -1) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(dedent(m[1])), &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		sidecars := len(root.Content) > 0
		for i := 0; i < len(root.Content); i += 2 {
			sidecars = sidecars && schemaHas(top, []string{root.Content[i].Value})
		}
		if sidecars {
			walk(root, nil)
		}
	}
	return bad
}

// dedent removes the indentation the lines of block share.
func dedent(block string) string {
	lines := strings.Split(block, "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// TestDocsNameKeys: every key of the sidecar's configuration that the
// documentation names in full (`section.key`), or writes in a YAML example
// of the sidecar's configuration, exists in the schema, so a renamed or
// removed key cannot stay in the docs. docs/calibrate.md is left
// out: its keys are calibrate fit's, whose `triton` section differs.
func TestDocsNameKeys(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "README.md"))
	checked := 0
	for _, f := range files {
		switch filepath.Base(f) {
		case "calibrate.md", "REPORT.md", "demo-results.md":
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked += len(docKey.FindAllString(string(data), -1))
		for _, p := range docKeyProblems(filepath.Base(f), string(data)) {
			t.Error(p)
		}
		for _, p := range yamlKeyProblems(filepath.Base(f), string(data)) {
			t.Error(p)
		}
	}
	if checked < 50 {
		t.Fatalf("%d dotted keys found in the docs: the pattern or the docs moved?", checked)
	}
}

// TestDocsNameKeysCatches shows that a misspelt key, a key under the wrong
// section and one past a scalar are caught, and that list indexes, map
// keys and names that are not the sidecar's pass.
func TestDocsNameKeysCatches(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  bool
	}{
		{"`admission.solve_share`", false},
		{"`models[i].backbone.model`", false},
		{"`sampling.tasks[].expert`", false},
		{"`server.grpc.keepalive_min_time`", false},
		{"`experiment.key.header` and `triton.h` and `sidecar.md`", false},
		{"`components[i].presets.b_first`", false},
		{"`models[i].heads[j].outputs.logits`", false},
		{"`models[i].heads[j].task`", false},
		{"`models[i].heads[j].tasks`", true},
		{"`models[i].heads[j].outputs.logits.x`", true},
		{"`admission.solve_shares`", true},
		{"`limits.max_bytes`", true},
		{"`log.level.debug`", true},
	} {
		got := docKeyProblems("x.md", tc.text)
		if (len(got) > 0) != tc.bad {
			t.Errorf("%s: problems %q, want some: %v", tc.text, got, tc.bad)
		}
	}
	if !slices.Contains(docKeyProblems("x.md", "`cache.max_byte`"), "x.md: `cache.max_byte` is no key of the sidecar's configuration") {
		t.Error("the problem does not name the file and the key")
	}
}

// TestDocsYAMLKeysCatches shows that a misspelt key of a YAML example is
// caught, in a nested list and a map's value too, and that a true example
// and YAML of another schema pass.
func TestDocsYAMLKeysCatches(t *testing.T) {
	block := func(s string) string { return "text\n```yaml\n" + s + "```\n" }
	for _, tc := range []struct {
		text, want string
	}{
		{block("models:\n  - {name: m, components: c, correct: emb}\n  - name: n\n    heads: [{task: a, model: h, outputs: {x: y}}]\n"), ""},
		{block("   triton: {grpc: a:1}\n   models:\n     - {name: m, correct: emb}\n"), ""},
		{block("apiVersion: v1\nkind: Pod\n"), ""},
		{block("models:\n  - {name: m, corect: emb}\n"), "models.corect"},
		{block("models:\n  - name: n\n    heads: [{task: a, modle: h}]\n"), "models.heads.modle"},
		{block("components:\n  - {name: c, presets: {p: a=1}}\nlimits: {max_bytes: 1}\n"), "limits.max_bytes"},
	} {
		got := yamlKeyProblems("x.md", tc.text)
		if tc.want == "" && len(got) > 0 || tc.want != "" && !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, " "+tc.want+" ") }) {
			t.Errorf("%q: problems %q, want one naming %q", tc.text, got, tc.want)
		}
	}
}
