package deploytest

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// rulesFile is the shipped alerting rules, relative to the repository.
const rulesFile = "docker/prometheus-rules.yml"

// TestAlertRules: docker/prometheus-rules.yml is a valid Prometheus rule
// file (model/rulefmt: strict YAML, every expression and template parsed)
// whose rules are all alerts, each with a for, a severity and a summary,
// whose expressions select only metrics the sidecar exports
// (docs/contracts.md); compose's Prometheus loads it (rule_files, and the
// file mounted where that names it); and docs/deploy.md shows its groups
// verbatim, so that the rules the documentation gives are the ones shipped,
// which TestAlertRulesEvaluate and tests/test_sidecar_sampling.py evaluate.
func TestAlertRules(t *testing.T) {
	text := readFile(t, strings.Split(rulesFile, "/")...)
	promql := parser.NewParser(parser.Options{})
	rf, errs := rulefmt.Parse([]byte(text), false, model.UTF8Validation, promql, promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatalf("%s: %v", rulesFile, errors.Join(errs...))
	}
	contract := contractMetrics(t)
	var alerts []string
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("%s: group %q: want a name and rules", rulesFile, g.Name)
		}
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" {
				t.Errorf("%s: group %s: a rule that is not an alert: %q", rulesFile, g.Name, r.Record)
			}
			if r.For <= 0 {
				t.Errorf("%s: %s: want a for", rulesFile, r.Alert)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: %s: want a severity label and a summary", rulesFile, r.Alert)
			}
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %s: %v", rulesFile, r.Alert, err) // rulefmt parsed it
			}
			var names []string
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					names = append(names, vs.Name)
				}
				return nil
			})
			if len(names) == 0 {
				t.Errorf("%s: %s: the expression names no metric", rulesFile, r.Alert)
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
