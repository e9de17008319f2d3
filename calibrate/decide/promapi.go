package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/mergectl/react-triton/experiment/feedback"
	"github.com/mergectl/react-triton/problem"
)

// QueryPrometheus reads the outcome counters of sel from a Prometheus
// server that scrapes the sidecars: base is its address
// (http://prometheus:9090), queried at /api/v1/query with
//
//	sum by (arm, kind) (react_experiment_outcomes_total{experiment="E"})
//
// and the same for the score and its squares (with model and task
// matchers when sel has them), at the server's present time: the counters'
// current values summed over every replica. A replica that restarted
// counts from 0 again, so its outcomes before the restart are left out.
// The problems are a problem.List whose paths are base.
func QueryPrometheus(ctx context.Context, client *http.Client, base string, sel Selector) (Outcomes, error) {
	o := NewOutcomes()
	var p problem.List
	for _, name := range []string{feedback.MetricOutcomes, feedback.MetricScore, feedback.MetricScoreSquares} {
		query := fmt.Sprintf("sum by (arm, kind) (%s%s)", name, matchers(sel))
		rows, err := instantQuery(ctx, client, base, query)
		if err != nil {
			p = append(p, &problem.Problem{Path: base, Msg: err.Error(), Transient: true})
			break // the next queries would fail the same way
		}
		for _, r := range rows {
			if !(r.value >= 0) || math.IsInf(r.value, 0) {
				p = append(p, &problem.Problem{Path: base, Msg: fmt.Sprintf("%s: %s is %v: a counter is a number ≥ 0", query, labelString(r.metric), r.value)})
				continue
			}
			o.add(ArmKind{r.metric["arm"], r.metric["kind"]}, counters[name], r.value)
		}
	}
	if err := p.Err(); err != nil {
		return Outcomes{}, err
	}
	if len(o.Samples) == 0 {
		// Which experiments are there, for the message.
		rows, err := instantQuery(ctx, client, base, "count by (experiment) ("+feedback.MetricOutcomes+")")
		if err != nil {
			return Outcomes{}, problem.List{{Path: base, Msg: err.Error(), Transient: true}}
		}
		for _, r := range rows {
			o.Experiments[r.metric["experiment"]] = true
		}
	} else {
		o.Experiments[sel.Experiment] = true
	}
	return o, nil
}

// matchers writes sel's label matchers.
func matchers(sel Selector) string {
	m := []string{"experiment=" + strconv.Quote(sel.Experiment)}
	if sel.Model != "" {
		m = append(m, "model="+strconv.Quote(sel.Model))
	}
	if sel.Task != "" {
		m = append(m, "task="+strconv.Quote(sel.Task))
	}
	return "{" + strings.Join(m, ",") + "}"
}

// row is one element of an instant vector.
type row struct {
	metric map[string]string
	value  float64
}

// apiResponse is the envelope of Prometheus' HTTP API.
type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// instantQuery runs query at base's /api/v1/query and returns its
// instant vector.
func instantQuery(ctx context.Context, client *http.Client, base, query string) ([]row, error) {
	u, err := url.JoinPath(base, "api/v1/query")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"?"+url.Values{"query": {query}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("unreachable: %w", unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if err != nil {
		return nil, fmt.Errorf("reading the answer to %s: %w", query, err)
	}
	var ar apiResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HTTP %s to %s (not Prometheus' API?)", resp.Status, query)
		}
		return nil, fmt.Errorf("the answer to %s is not Prometheus' JSON: %v", query, err)
	}
	if ar.Status != "success" {
		return nil, fmt.Errorf("HTTP %s to %s: %s: %s", resp.Status, query, ar.ErrorType, ar.Error)
	}
	if ar.Data.ResultType != "vector" {
		return nil, fmt.Errorf("the answer to %s is a %q, want a vector", query, ar.Data.ResultType)
	}
	rows := make([]row, 0, len(ar.Data.Result))
	for _, r := range ar.Data.Result {
		s, ok := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("the answer to %s has the value %v: want a number in a string", query, r.Value[1])
		}
		rows = append(rows, row{r.Metric, v})
	}
	sort.Slice(rows, func(i, j int) bool { return labelString(rows[i].metric) < labelString(rows[j].metric) })
	return rows, nil
}
