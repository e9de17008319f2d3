package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// tableRow is one row of docs/architecture.md's table of packages: the
// packages it describes and the module's packages its last column says
// they import.
type tableRow struct {
	line     int
	first    []string // the packages of the first column
	holds    []string // backquoted names of the second column
	imported []string // backquoted names of the last column
}

// backquoted matches a name in backquotes.
var backquoted = regexp.MustCompile("`([^`]+)`")

// packageTable reads the rows of the table under "## Packages" in doc.
func packageTable(t *testing.T, doc string) []tableRow {
	t.Helper()
	var rows []tableRow
	in := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cols) != 3 {
			t.Fatalf("docs/architecture.md:%d: %d columns, want 3 (a | inside a cell?)", i+1, len(cols))
		}
		names := func(s string) []string {
			var out []string
			for _, m := range backquoted.FindAllStringSubmatch(s, -1) {
				out = append(out, strings.TrimSuffix(m[1], "/"))
			}
			return out
		}
		rows = append(rows, tableRow{line: i + 1, first: names(cols[0]), holds: names(cols[1]), imported: names(cols[2])})
	}
	if len(rows) < 30 {
		t.Fatalf("docs/architecture.md: %d rows in the table of packages, the table moved?", len(rows))
	}
	return rows
}

// tableProblems checks rows against pkgs (each package's imports of the
// module, paths inside it): every package is described by a row, and each
// row's last column names exactly what the row's packages import of the
// rest of the module. A row's packages are those of its first column and
// those its second names (in full, or under the first column's path) that
// no row has in its first column. In the last column, `X/*` or a name that
// is a folder but no package stands for the packages under it; other names
// that are no package of the module (a qualifier such as (`npyfile`)) are
// not arrows.
func tableProblems(rows []tableRow, pkgs map[string][]string) []string {
	isPkg := func(p string) bool { _, ok := pkgs[p]; return ok }
	headed := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.first {
			headed[p] = true
		}
	}
	var bad []string
	described := map[string]bool{}
	for _, r := range rows {
		where := "docs/architecture.md:" + strconv.Itoa(r.line) + ": "
		own := map[string]bool{}
		for _, p := range r.first {
			if isPkg(p) {
				own[p] = true
			}
		}
		for _, n := range r.holds {
			for _, cand := range append([]string{n}, prefixed(r.first, n)...) {
				if isPkg(cand) && !headed[cand] {
					own[cand] = true
				}
			}
		}
		if len(own) == 0 {
			continue // tritonmodels/, docker/, scripts/: no Go package of this module
		}
		// What the row's packages import of the rest of the module.
		used := map[string]bool{}
		for p := range own {
			described[p] = true
			for _, imp := range pkgs[p] {
				if !own[imp] {
					used[imp] = true
				}
			}
		}
		// What the last column names.
		covered := map[string]bool{}
		for _, n := range r.imported {
			prefix, wild := strings.CutSuffix(n, "/*")
			if !wild && !isPkg(n) && hasUnder(pkgs, n) {
				prefix, wild = n, true
			}
			switch {
			case wild:
				hit := false
				for imp := range used {
					if strings.HasPrefix(imp, prefix+"/") {
						covered[imp], hit = true, true
					}
				}
				if !hit {
					bad = append(bad, where+"names `"+n+"`, but the row's packages import nothing under it")
				}
			case isPkg(n):
				if own[n] {
					continue // the row's own package, named where it is used
				}
				if !used[n] {
					bad = append(bad, where+"names `"+n+"`, which the row's packages ("+strings.Join(sortedKeys(own), ", ")+") do not import")
				}
				covered[n] = true
			}
		}
		for _, imp := range sortedKeys(used) {
			if !covered[imp] {
				bad = append(bad, where+"the row's packages import `"+imp+"`, which its last column does not name")
			}
		}
	}
	for _, p := range sortedKeys(pkgs) {
		if !described[p] {
			bad = append(bad, "docs/architecture.md: no row of the table of packages describes "+p)
		}
	}
	return bad
}

// prefixed returns name under each of the first column's paths.
func prefixed(first []string, name string) []string {
	var out []string
	for _, f := range first {
		out = append(out, f+"/"+name)
	}
	return out
}

// hasUnder reports whether a package of pkgs lies under folder dir.
func hasUnder(pkgs map[string][]string, dir string) bool {
	for p := range pkgs {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// moduleImports returns imports' answer with the imports of the module's
// packages only, as paths inside the module.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for pkg, imps := range imports(t, root) {
		own := []string{}
		for _, imp := range imps {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				own = append(own, rel)
			}
		}
		out[pkg] = own
	}
	return out
}

// TestArchitectureTable: docs/architecture.md's table of packages
// describes every package of the module, and each row's "imports of ours"
// column names what its packages import of the module, no more and no
// less (in the default, OpenBLAS and cuda builds together).
func TestArchitectureTable(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tableProblems(packageTable(t, string(doc)), moduleImports(t, root)) {
		t.Error(p)
	}
}

// TestArchitectureTableCatches shows that the check can fail: an import
// the row leaves out, one it names that is not there, a wildcard over
// nothing, and a package no row describes.
func TestArchitectureTableCatches(t *testing.T) {
	pkgs := map[string][]string{
		"a":       {"b", "c/x"},
		"b":       nil,
		"c/x":     nil,
		"c/y":     {"b"},
		"c/x/sub": {"c/x"},
	}
	doc := "## Packages\n\n| path | holds | imports of ours |\n|---|---|---|\n"
	for _, tc := range []struct {
		name, rows, want string
	}{
		{"an import left out", "| `a/` | x | `b` |\n| `b/` | x | — |\n| `c/` | `c/x`, `c/y`, `c/x/sub` | `b` |\n", "import `c/x`, which its last column does not name"},
		{"an import that is not there", "| `a/` | x | `b`, `c/*`, `c/y` |\n| `b/` | x | — |\n| `c/` | `c/x`, `c/y`, `c/x/sub` | `b` |\n", "names `c/y`, which the row's packages (a) do not import"},
		{"a wildcard over nothing", "| `a/` | x | `b`, `c/*` |\n| `b/` | x | `c/*` |\n| `c/` | `c/x`, `c/y`, `c/x/sub` | `b` |\n", "names `c/*`, but the row's packages import nothing under it"},
		{"a package no row describes", "| `a/` | x | `b`, `c` |\n| `b/` | x | — |\n| `c/` | `c/x`, `c/y` | `b` |\n", "no row of the table of packages describes c/x/sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := packageTable(t, doc+strings.Repeat("| `z/` | x | — |\n", 30)+tc.rows)
			got := tableProblems(rows, pkgs)
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("no problem containing %q in %q", tc.want, got)
			}
		})
	}
	// And the table as written in the example is clean.
	rows := packageTable(t, doc+strings.Repeat("| `z/` | x | — |\n", 30)+"| `a/` | x | `b`, `c/*` |\n| `b/` | x | — |\n| `c/` | `c/x`, `c/y`, `c/x/sub` | `b` |\n")
	if got := tableProblems(rows, pkgs); len(got) != 0 {
		t.Errorf("a true table: %q", got)
	}
}
