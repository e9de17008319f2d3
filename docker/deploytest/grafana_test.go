package deploytest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name    string `json:"name"`
			Type    string `json:"type"`
			Query   any    `json:"query"`
			Current struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr       string `json:"expr"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, "docker", "grafana", "dashboards", "react-sidecar.json")), &d); err != nil {
		t.Fatalf("react-sidecar.json: %v", err)
	}
	return d
}

// metricName matches a metric of the sidecar's in a PromQL expression.
var metricName = regexp.MustCompile(`\breact_[a-z0-9_]+`)

// DashboardMetrics returns the sidecar metrics the dashboard's queries and
// variables name, histogram series (_bucket, _sum, _count) by their
// family, sorted.
func dashboardMetrics(d dashboard) []string {
	seen := map[string]bool{}
	add := func(expr string) {
		for _, m := range metricName.FindAllString(expr, -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if f, ok := strings.CutSuffix(m, suffix); ok && (strings.HasSuffix(f, "_seconds") || strings.HasSuffix(f, "_confidence")) {
					m = f
				}
			}
			seen[m] = true
		}
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			add(tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			s, _ := q["query"].(string)
			add(s)
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// contractMetrics returns the metric names of docs/contracts.md's table of
// the sidecar's metrics (rows that start with a react_ name in backquotes).
func contractMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := tableMetrics(readFile(t, "docs", "contracts.md"))
	if len(out) < 20 {
		t.Fatalf("docs/contracts.md: %d sidecar metrics found, the table moved?", len(out))
	}
	return out
}

// metricsRow matches the first cell of a row of contracts' table of
// metrics: one or more names, comma-separated.
var metricsRow = regexp.MustCompile("^\\| (`react_[^|]*)\\|")

// tableMetrics returns the metric names of the rows of a table of metrics.
func tableMetrics(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if m := metricsRow.FindStringSubmatch(line); m != nil {
			for _, name := range metricName.FindAllString(m[1], -1) {
				out[name] = true
			}
		}
	}
	return out
}

// TestTableMetrics: every name of a row counts, however many the row has
// and whatever note follows one; names in other cells and other lines do
// not.
func TestTableMetrics(t *testing.T) {
	text := "| `react_a_total` | `model` |\n" +
		"| `react_b`, `react_c_seconds` (histogram), `react_d` | `task`; see `react_e` |\n" +
		"`react_f` in prose\n| name | `react_g` |\n"
	got := tableMetrics(text)
	want := []string{"react_a_total", "react_b", "react_c_seconds", "react_d"}
	if len(got) != len(want) {
		t.Errorf("tableMetrics = %v, want %v", got, want)
	}
	for _, n := range want {
		if !got[n] {
			t.Errorf("tableMetrics = %v: no %s", got, n)
		}
	}
}

// TestGrafanaDashboard: the compose project provisions Grafana with the
// data source and the dashboard of docker/grafana, read-only; the
// dashboard's panels all query that data source; every metric its queries
// name is one of the sidecar's, as docs/contracts.md lists them
// (internal/archtest's TestContractsMetrics holds that list to the names
// the code defines); and it covers traffic,
// latency, the cache, reloads and experiments with their outcomes.
func TestGrafanaDashboard(t *testing.T) {
	p := loadCompose(t)
	g, err := p.GetService("grafana")
	if err != nil {
		t.Fatalf("compose: %v", err)
	}
	mounts := map[string]string{}
	for _, v := range g.Volumes {
		if !v.ReadOnly {
			t.Errorf("grafana: %s is mounted read-write", v.Target)
		}
		mounts[v.Target] = v.Source
	}
	for target, src := range map[string]string{
		"/etc/grafana/provisioning/datasources/react.yml": repoPath("docker", "grafana", "datasources.yml"),
		"/etc/grafana/provisioning/dashboards/react.yml":  repoPath("docker", "grafana", "dashboards.yml"),
		"/etc/grafana/dashboards":                         repoPath("docker", "grafana", "dashboards"),
	} {
		if mounts[target] != src {
			t.Errorf("grafana: %s mounted from %q, want %s", target, mounts[target], src)
		}
	}

	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name      string `json:"name"`
			UID       string `json:"uid"`
			Type      string `json:"type"`
			Access    string `json:"access"`
			URL       string `json:"url"`
			IsDefault bool   `json:"isDefault"`
			Editable  bool   `json:"editable"`
		} `json:"datasources"`
	}
	if err := yaml.UnmarshalStrict([]byte(readFile(t, "docker", "grafana", "datasources.yml")), &ds); err != nil {
		t.Fatalf("datasources.yml: %v", err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasources.yml: want one prometheus data source, got %+v", ds.Datasources)
	}
	src := ds.Datasources[0]
	prom, err := p.GetService("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + prom.Name + ":9090"; src.URL != want {
		t.Errorf("datasources.yml: url %s, want %s", src.URL, want)
	}

	var prov struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name            string `json:"name"`
			Folder          string `json:"folder"`
			Type            string `json:"type"`
			DisableDeletion bool   `json:"disableDeletion"`
			AllowUIUpdates  bool   `json:"allowUiUpdates"`
			Options         struct {
				Path                      string `json:"path"`
				FoldersFromFilesStructure bool   `json:"foldersFromFilesStructure"`
			} `json:"options"`
		} `json:"providers"`
	}
	if err := yaml.UnmarshalStrict([]byte(readFile(t, "docker", "grafana", "dashboards.yml")), &prov); err != nil {
		t.Fatalf("dashboards.yml: %v", err)
	}
	if len(prov.Providers) != 1 || prov.Providers[0].Options.Path != "/etc/grafana/dashboards" {
		t.Errorf("dashboards.yml: want one provider reading /etc/grafana/dashboards, got %+v", prov.Providers)
	}

	d := loadDashboard(t)
	var dsVar string
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			dsVar, _ = v.Current.Value.(string)
		}
	}
	if dsVar != src.UID {
		t.Errorf("dashboard: data source variable defaults to %q, the provisioned uid is %q", dsVar, src.UID)
	}
	titles := make([]string, 0, len(d.Panels))
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: a query not on the dashboard's data source", p.Title)
			}
		}
	}
	for _, row := range []string{"Traffic", "W_p cache and solves", "Reloads and certificates", "Experiments"} {
		if !slices.Contains(titles, row) {
			t.Errorf("dashboard: no row %q", row)
		}
	}

	known := contractMetrics(t)
	used := dashboardMetrics(d)
	for _, m := range used {
		if !known[m] {
			t.Errorf("dashboard queries %s, which docs/contracts.md does not list among the sidecar's metrics", m)
		}
	}
	for _, want := range []string{"react_requests_total", "react_request_duration_seconds", "react_wp_cache_lookups_total", "react_config_reloads_total", "react_experiment_requests_total", "react_experiment_outcomes_total", "react_experiment_outcome_score_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("dashboard: nothing queries %s", want)
		}
	}
}
