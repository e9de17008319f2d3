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
// string literal, or concatenation of them, that is a whole react_ name,
// and every name that a Prometheus options literal builds from a
// Namespace or Subsystem and a Name, in the non-test Go files
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
			s, ok := "", false
			switch n := n.(type) {
			case *ast.BasicLit, *ast.BinaryExpr:
				s, ok = stringValue(n.(ast.Expr))
			case *ast.CompositeLit:
				s, ok = optsName(n)
			}
			if ok && metricName.MatchString(s) {
				out[s] = true
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

// stringValue returns the value of a string literal, or of a
// concatenation of them ("react_" + "x_total").
func stringValue(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return stringValue(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := stringValue(e.X)
		y, ok2 := stringValue(e.Y)
		return x + y, ok && ok2
	}
	return "", false
}

// optsName returns the name that a Prometheus options literal with a
// Namespace or Subsystem gives its metric (namespace_subsystem_name, as
// prometheus.BuildFQName joins the parts that are not empty).
func optsName(c *ast.CompositeLit) (string, bool) {
	parts := map[string]string{}
	for _, e := range c.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if key, ok := kv.Key.(*ast.Ident); ok {
			if v, ok := stringValue(kv.Value); ok {
				parts[key.Name] = v
			}
		}
	}
	if parts["Name"] == "" || parts["Namespace"] == "" && parts["Subsystem"] == "" {
		return "", false
	}
	var names []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			names = append(names, parts[k])
		}
	}
	return strings.Join(names, "_"), true
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

// TestCodeMetricsParts: a metric name built from parts, literals
// concatenated or a Prometheus options literal's Namespace, Subsystem and
// Name, counts as the code's (and so must be in docs/contracts.md's table).
func TestCodeMetricsParts(t *testing.T) {
	root := t.TempDir()
	src := "package m\n\nvar (\n" +
		"\ta = prometheus.CounterOpts{Namespace: \"react\", Subsystem: \"cache\", Name: \"hits_total\", Help: \"h\"}\n" +
		"\tb = prometheus.GaugeOpts{Namespace: \"react\", Name: \"up\"}\n" +
		"\tc = \"react_\" + (\"rows\" + \"_total\")\n" +
		"\td = prometheus.CounterOpts{Name: \"react_whole_total\"}\n" +
		"\te = prometheus.CounterOpts{Namespace: \"other\", Name: \"x\"}\n)\n"
	if err := os.WriteFile(filepath.Join(root, "m.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := sortedKeys(codeMetrics(t, root))
	if want := []string{"react_cache_hits_total", "react_rows_total", "react_up", "react_whole_total"}; !slices.Equal(got, want) {
		t.Errorf("codeMetrics = %q, want %q", got, want)
	}
}
