package decide

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/problem"
)

// counters are the metrics of a sample, by name.
var counters = map[string]counter{
	feedback.MetricOutcomes:     count,
	feedback.MetricScore:        sum,
	feedback.MetricScoreSquares: sumSquares,
}

// maxPage bounds a metrics page read.
const maxPage = 64 << 20

// IsURL reports whether src is an http or https address rather than a
// file.
func IsURL(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}

// ReadMetrics reads the outcome counters of sel from one sidecar's
// metrics page, in Prometheus' text format: src is its address
// (http://host:8003/metrics) or a file holding a page (a saved scrape).
// The problems are a problem.List whose paths are src.
func ReadMetrics(ctx context.Context, client *http.Client, src string, sel Selector) (Outcomes, error) {
	page, err := readPage(ctx, client, src)
	if err != nil {
		return Outcomes{}, problem.List{{Path: src, Msg: err.Error(), Transient: IsURL(src)}}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return Outcomes{}, problem.List{{Path: src, Msg: fmt.Sprintf("not a metrics page in Prometheus' text format: line %d: %s", pe.Line, pe.Msg)}}
		}
		return Outcomes{}, problem.List{{Path: src, Msg: "not a metrics page in Prometheus' text format: " + err.Error()}}
	}
	return outcomesOf(src, families, sel)
}

// readPage returns the page at src.
func readPage(ctx context.Context, client *http.Client, src string) (string, error) {
	var r io.Reader
	if IsURL(src) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("unreachable: %w", unwrapURL(err))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("HTTP %s", resp.Status)
		}
		r = resp.Body
	} else {
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPage+1))
	if err != nil {
		return "", fmt.Errorf("reading: %w", err)
	}
	if len(b) > maxPage {
		return "", fmt.Errorf("more than %d MiB: not a sidecar's metrics page", maxPage>>20)
	}
	return string(b), nil
}

// unwrapURL drops the method and address that a *url.Error repeats.
func unwrapURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// outcomesOf sums the counters of sel in families.
func outcomesOf(src string, families map[string]*dto.MetricFamily, sel Selector) (Outcomes, error) {
	o := NewOutcomes()
	var p problem.List
	names := make([]string, 0, len(counters))
	for name := range counters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		mf := families[name]
		if mf == nil {
			continue
		}
		if t := mf.GetType(); t != dto.MetricType_COUNTER && t != dto.MetricType_UNTYPED {
			p = append(p, &problem.Problem{Path: src, Msg: fmt.Sprintf("%s is a %s: want a counter", name, strings.ToLower(t.String()))})
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			v := m.GetCounter().GetValue()
			if mf.GetType() == dto.MetricType_UNTYPED {
				v = m.GetUntyped().GetValue()
			}
			if name == feedback.MetricOutcomes && labels["experiment"] != "" {
				o.Experiments[labels["experiment"]] = true
			}
			if !sel.keeps(labels) {
				continue
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				p = append(p, &problem.Problem{Path: src, Msg: fmt.Sprintf("%s%s is %v: a counter is a number ≥ 0", name, labelString(labels), v)})
				continue
			}
			o.add(ArmKind{labels["arm"], labels["kind"]}, counters[name], v)
		}
	}
	return o, p.Err()
}

// labelString writes labels as PromQL does, sorted.
func labelString(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
