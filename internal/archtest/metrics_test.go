package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metricName is a name of the sidecar's or the backend's metrics as the
// code spells it: a whole string literal.
var metricName = regexp.MustCompile(`^react_[a-z0-9_]*[a-z0-9]$`)

// codeMetrics returns the metric names the module's code defines: every
// string literal that is a whole react_ name, in the non-test Go files
// under root. The generated protocol code and bench/ (programs that read
// the metrics of a sidecar, and so spell its names, with _count suffixes)
// are left out.
func codeMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				rel == "bench" || rel == "triton/tritonpb" || rel == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (docker/deploytest)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && metricName.MatchString(s) {
					out[s] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// contractsRow matches a row of docs/contracts.md's table of metrics: its
// first cell, one or more names in backquotes, comma-separated, each with
// an optional note such as (histogram).
var contractsRow = regexp.MustCompile("^\\| (`react_[^|]*)\\|")

// docMetrics returns the metric names of the rows of contracts' table.
func docMetrics(contracts string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(contracts, "\n") {
		if m := contractsRow.FindStringSubmatch(line); m != nil {
			for _, name := range backquoted.FindAllStringSubmatch(m[1], -1) {
				out[name[1]] = true
			}
		}
	}
	return out
}

// metricProblems compares the names of contracts' table with those of the
// code, both ways.
func metricProblems(doc, code map[string]bool) []string {
	var bad []string
	for _, m := range sortedKeys(doc) {
		if !code[m] {
			bad = append(bad, "docs/contracts.md lists "+m+", which no code defines")
		}
	}
	for _, m := range sortedKeys(code) {
		if !doc[m] {
			bad = append(bad, "the code defines "+m+", which docs/contracts.md's table of metrics does not list")
		}
	}
	return bad
}

// TestContractsMetrics: docs/contracts.md's table of metrics lists every
// react_ metric the code defines (the sidecar's, the feedback window's,
// live sampling's, the shadow comparison's and the backend's), and nothing
// else.
func TestContractsMetrics(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, code := docMetrics(string(data)), codeMetrics(t, root)
	if len(doc) < 20 || len(code) < 20 {
		t.Fatalf("%d metrics in docs/contracts.md, %d in the code: the table or the code moved?", len(doc), len(code))
	}
	for _, p := range metricProblems(doc, code) {
		t.Error(p)
	}
}

// TestContractsMetricsCatches shows that the comparison can fail either
// way, and that a row of several names counts each.
func TestContractsMetricsCatches(t *testing.T) {
	code := map[string]bool{"react_a_total": true, "react_b": true, "react_c": true}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"a name misspelt", "| `react_a_totl` | x |\n| `react_b`, `react_c` | — |\n", "lists react_a_totl, which no code defines"},
		{"a metric left out", "| `react_a_total` (histogram) | x |\n| `react_b` | — |\n", "defines react_c, which docs/contracts.md's table of metrics does not list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := metricProblems(docMetrics(tc.doc), code)
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("no problem containing %q in %q", tc.want, got)
			}
		})
	}
	if got := metricProblems(docMetrics("| `react_a_total` (histogram) | `x` |\n| `react_b`, `react_c` | — |\n"), code); len(got) != 0 {
		t.Errorf("a true table: %q", got)
	}
}
