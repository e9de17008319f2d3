package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mergectl/react-triton/experiment/sequential"
	"github.com/mergectl/react-triton/problem"
)

// fakePrometheus answers /api/v1/query from a table of queries to JSON
// results, and records the queries it was asked.
type fakePrometheus struct {
	mu      sync.Mutex
	asked   []string
	answers map[string]string // query → the "result" array
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query().Get("query")
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	result, ok := f.answers[q]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal("unexpected query " + q)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%s}`, msg)
		return
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
}

func vector(rows ...string) string { return "[" + strings.Join(rows, ",") + "]" }

func sample(arm, kind, value string) string {
	return fmt.Sprintf(`{"metric":{"arm":%q,"kind":%q},"value":[1764230400.123,%q]}`, arm, kind, value)
}

func TestQueryPrometheus(t *testing.T) {
	f := &fakePrometheus{answers: map[string]string{
		`sum by (arm, kind) (react_experiment_outcomes_total{experiment="fashion-ab",model="fashion_ab",task="fashion"})`: vector(
			sample("merged", "label", "1210"), sample("react", "label", "1190")),
		`sum by (arm, kind) (react_experiment_outcome_score_total{experiment="fashion-ab",model="fashion_ab",task="fashion"})`: vector(
			sample("merged", "label", "862"), sample("react", "label", "914")),
		`sum by (arm, kind) (react_experiment_outcome_score_squares_total{experiment="fashion-ab",model="fashion_ab",task="fashion"})`: vector(
			sample("merged", "label", "862"), sample("react", "label", "914")),
		`sum by (arm, kind) (react_experiment_outcomes_total{experiment="gone"})`:              vector(),
		`sum by (arm, kind) (react_experiment_outcome_score_total{experiment="gone"})`:         vector(),
		`sum by (arm, kind) (react_experiment_outcome_score_squares_total{experiment="gone"})`: vector(),
		`count by (experiment) (react_experiment_outcomes_total)`: vector(
			`{"metric":{"experiment":"fashion-ab"},"value":[1,"2"]}`, `{"metric":{"experiment":"homepage"},"value":[1,"3"]}`),
		`sum by (arm, kind) (react_experiment_outcomes_total{experiment="bad"})`:              vector(sample("A", "label", "-3")),
		`sum by (arm, kind) (react_experiment_outcome_score_total{experiment="bad"})`:         vector(),
		`sum by (arm, kind) (react_experiment_outcome_score_squares_total{experiment="bad"})`: vector(),
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()

	o, err := QueryPrometheus(ctx, srv.Client(), srv.URL, Selector{Experiment: "fashion-ab", Model: "fashion_ab", Task: "fashion"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[ArmKind]sequential.Sample{{"merged", "label"}: {N: 1210, Sum: 862, SumSq: 862}, {"react", "label"}: {N: 1190, Sum: 914, SumSq: 914}}
	if len(o.Samples) != 2 || o.Samples[ArmKind{"merged", "label"}] != want[ArmKind{"merged", "label"}] || o.Samples[ArmKind{"react", "label"}] != want[ArmKind{"react", "label"}] {
		t.Errorf("samples %v, want %v", o.Samples, want)
	}
	if len(f.asked) != 3 {
		t.Errorf("asked %q", f.asked)
	}

	// No outcomes: the experiments there are asked for, for the message.
	o, err = QueryPrometheus(ctx, srv.Client(), srv.URL+"/", Selector{Experiment: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 0 || !o.Experiments["fashion-ab"] || !o.Experiments["homepage"] || o.Experiments["gone"] {
		t.Errorf("%+v", o)
	}
	_, err = Decide(Config{Selector: Selector{Experiment: "gone"}, Arms: []Arm{{"A", 1}, {"B", 1}}}, o)
	if err == nil || !strings.Contains(err.Error(), "no outcomes of experiment gone in the sources (experiments with outcomes there: fashion-ab, homepage)") {
		t.Errorf("%v", err)
	}

	for _, tc := range []struct {
		name, base string
		sel        Selector
		want       string
	}{
		{"a negative counter", srv.URL, Selector{Experiment: "bad"}, `{arm="A",kind="label"} is -3: a counter is a number ≥ 0`},
		{"an error answer", srv.URL, Selector{Experiment: "x", Model: "y"},
			`HTTP 400 Bad Request to sum by (arm, kind) (react_experiment_outcomes_total{experiment="x",model="y"}): bad_data: unexpected query`},
		{"not Prometheus", srv.URL + "/elsewhere", Selector{Experiment: "x"}, "HTTP 404 Not Found to sum by (arm, kind) (react_experiment_outcomes_total{experiment=\"x\"}) (not Prometheus' API?)"},
		{"unreachable", closedURL(t), Selector{Experiment: "x"}, "unreachable: dial tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := QueryPrometheus(ctx, srv.Client(), tc.base, tc.sel)
			var p problem.List
			if !errors.As(err, &p) || len(p) != 1 || p[0].Path != tc.base || !strings.Contains(p[0].Msg, tc.want) {
				t.Errorf("%v: want one problem at %s with %q", err, tc.base, tc.want)
			}
		})
	}
}

// TestMatchers: label values are quoted as PromQL strings.
func TestMatchers(t *testing.T) {
	got := matchers(Selector{Experiment: `a"b\c`, Model: "m"})
	if want := `{experiment="a\"b\\c",model="m"}`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
