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

// TestDocsNameKeys: every key of the sidecar's configuration that the
// documentation names in full (`section.key`) exists in the schema, so a
// renamed or removed key cannot stay in the docs. docs/calibrate.md is left
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
