package deploytest

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// ruleFile is Prometheus' rule file schema, the fields an alerting rule
// may have (a recording rule's record is left out: the file has none).
type ruleFile struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert         string            `json:"alert"`
			Expr          string            `json:"expr"`
			For           string            `json:"for,omitempty"`
			KeepFiringFor string            `json:"keep_firing_for,omitempty"`
			Labels        map[string]string `json:"labels,omitempty"`
			Annotations   map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

// rulesFile is the shipped alerting rules, relative to the repository.
const rulesFile = "docker/prometheus-rules.yml"

// TestAlertRules: docker/prometheus-rules.yml decodes strictly as a
// Prometheus rule file whose alerts each have an expression, a valid
// for, a severity and a summary, and name only metrics the sidecar
// exports (docs/contracts.md); compose's Prometheus loads it (rule_files,
// and the file mounted where that names it); and docs/deploy.md shows its
// groups verbatim, so that the rule the documentation gives is the one
// shipped, which tests/test_sidecar_sampling.py evaluates against a
// sidecar's /metrics.
func TestAlertRules(t *testing.T) {
	text := readFile(t, strings.Split(rulesFile, "/")...)
	var rf ruleFile
	if err := yaml.UnmarshalStrict([]byte(text), &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	contract := contractMetrics(t)
	var alerts []string
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("%s: group %q: want a name and rules", rulesFile, g.Name)
		}
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: group %s: rule %q: want an alert name and an expression", rulesFile, g.Name, r.Alert)
			}
			if _, err := model.ParseDuration(r.For); err != nil {
				t.Errorf("%s: %s: for %q: %v", rulesFile, r.Alert, r.For, err)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: %s: want a severity label and a summary", rulesFile, r.Alert)
			}
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("%s: %s: the expression names no react_ metric", rulesFile, r.Alert)
			}
			for _, m := range names {
				if !contract[m] {
					t.Errorf("%s: %s: %s is not a metric of docs/contracts.md", rulesFile, r.Alert, m)
				}
			}
		}
	}
	if !slices.Contains(alerts, "ReactCorrectionStale") {
		t.Errorf("%s: no ReactCorrectionStale alert (tests/test_sidecar_sampling.py evaluates it); alerts: %v", rulesFile, alerts)
	}

	// Compose's Prometheus loads it.
	cfg := loadPrometheus(t)
	p := loadCompose(t)
	prom, err := p.GetService("prometheus")
	if err != nil {
		t.Fatalf("compose: %v", err)
	}
	mounts := map[string]string{}
	for _, v := range prom.Volumes {
		mounts[v.Target] = v.Source
	}
	if len(cfg.RuleFiles) != 1 {
		t.Fatalf("docker/prometheus.yml: rule_files %v, want the one rules file", cfg.RuleFiles)
	}
	// Relative rule files are relative to the configuration file's directory.
	target := cfg.RuleFiles[0]
	if !path.IsAbs(target) {
		target = path.Join("/etc/prometheus", target)
	}
	if mounts[target] != repoPath(strings.Split(rulesFile, "/")...) {
		t.Errorf("prometheus: rule file %s is mounted from %q, want %s", target, mounts[target], rulesFile)
	}

	// docs/deploy.md shows the groups as shipped.
	groups := text[strings.Index(text, "groups:"):]
	if !strings.Contains(readFile(t, "docs", "deploy.md"), "```yaml\n"+groups+"```\n") {
		t.Errorf("docs/deploy.md does not show %s's groups verbatim in a yaml block: copy them from the file", rulesFile)
	}
}
