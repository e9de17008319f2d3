package feedback

import (
	"errors"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/problem"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Feedback
	}{
		{"label", `{"id": "42", "label": 3}`, Feedback{ID: "42", Kind: Label, Class: 3}},
		{"label zero", `{"id": "a", "label": 0}`, Feedback{ID: "a", Kind: Label, Class: 0}},
		{"label integral float", `{"id": "a", "label": 3.0}`, Feedback{ID: "a", Kind: Label, Class: 3}},
		{"label exponent", `{"id": "a", "label": 1e2}`, Feedback{ID: "a", Kind: Label, Class: 100}},
		{"label with output", `{"output": "fashion_logits", "id": "x-1", "label": 9}`, Feedback{ID: "x-1", Kind: Label, Class: 9, Output: "fashion_logits"}},
		{"reward", `{"id": "42", "reward": 0.7}`, Feedback{ID: "42", Kind: Reward, Value: 0.7}},
		{"reward bounds", `{"id": "42", "reward": 1}`, Feedback{ID: "42", Kind: Reward, Value: 1}},
		{"null left out", `{"id": "42", "label": null, "reward": 0, "output": null}`, Feedback{ID: "42", Kind: Reward, Value: 0}},
		{"unicode id", `{"id": "ü\u00e9", "reward": 0.5}`, Feedback{ID: "üé", Kind: Reward, Value: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequest([]byte(tc.body))
			if err != nil {
				t.Fatalf("%s: %v", tc.body, err)
			}
			if got != tc.want {
				t.Errorf("%s: %+v, want %+v", tc.body, got, tc.want)
			}
		})
	}
}

// TestParseRequestProblems: every problem of a body, at once, each at its
// key.
func TestParseRequestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []string // each problem's "path: message" start, in order
	}{
		{"empty", ``, []string{"malformed JSON"}},
		{"not an object", `[1, 2]`, []string{"want a JSON object"}},
		{"truncated", `{"id": "a", "label": 3`, []string{"malformed JSON at byte"}},
		{"trailing", `{"id": "a", "label": 3} {}`, []string{"malformed JSON: more after the object"}},
		{"nothing", `{}`, []string{"want a label or a reward", "id: missing"}},
		{"no id", `{"label": 2}`, []string{"id: missing"}},
		{"null id", `{"id": null, "label": 2}`, []string{"id: missing"}},
		{"empty id", `{"id": "", "label": 2}`, []string{"id: empty"}},
		{"numeric id", `{"id": 42, "label": 2}`, []string{"id: want a string, got 42"}},
		{"both", `{"id": "a", "label": 2, "reward": 0.5}`, []string{"both a label and a reward"}},
		{"negative label", `{"id": "a", "label": -1}`, []string{"label: want a class index (an integer ≥ 0), got -1"}},
		{"fractional label", `{"id": "a", "label": 2.5}`, []string{"label: want a class index"}},
		{"string label", `{"id": "a", "label": "3"}`, []string{`label: want a class index (an integer ≥ 0), got "3"`}},
		{"huge label", `{"id": "a", "label": 1e300}`, []string{"label: want a class index"}},
		{"reward above 1", `{"id": "a", "reward": 1.5}`, []string{"reward: want a number in [0, 1], got 1.5"}},
		{"negative reward", `{"id": "a", "reward": -0.1}`, []string{"reward: want a number in [0, 1]"}},
		{"boolean reward", `{"id": "a", "reward": true}`, []string{"reward: want a number in [0, 1], got true"}},
		{"output with reward", `{"id": "a", "reward": 0.5, "output": "o"}`, []string{"output: names the output of a label"}},
		{"output not a string", `{"id": "a", "label": 1, "output": 3}`, []string{"output: want an output's name"}},
		{"twice", `{"id": "a", "label": 1, "label": 2}`, []string{"label: given twice"}},
		{"unknown key", `{"id": "a", "label": 1, "lable": 2, "a b": 1}`, []string{"lable: unknown key", `["a b"]: unknown key`}},
		{"all at once", `{"id": 7, "label": -2, "reward": 3, "extra": {}}`, []string{
			"id: want a string", "label: want a class index", "reward: want a number", "extra: unknown key", "both a label and a reward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRequest([]byte(tc.body))
			var list problem.List
			if !errors.As(err, &list) {
				t.Fatalf("%s: %v, want a problem.List", tc.body, err)
			}
			if len(list) != len(tc.want) {
				t.Fatalf("%s: %d problems, want %d:\n%v", tc.body, len(list), len(tc.want), err)
			}
			for i, p := range list {
				if !strings.HasPrefix(p.Error(), tc.want[i]) {
					t.Errorf("%s: problem %d is %q, want it to start %q", tc.body, i, p.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestParseRequestTooLong(t *testing.T) {
	body := `{"id": "` + strings.Repeat("x", MaxBodyBytes) + `", "reward": 1}`
	if _, err := ParseRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), "more than 65536") {
		t.Errorf("a body of %d bytes: %v", len(body), err)
	}
}
