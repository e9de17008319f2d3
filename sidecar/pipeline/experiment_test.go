package pipeline_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/experiment"
	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/internal/faketriton"
	"github.com/mergectl/react-triton/sidecar/pipeline"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

func intp(v int) *int { return &v }

// experimentConfig is the standard configuration with experiment "ab" over
// both models: arms plain (no correction), bheavy (preset b_first) and
// even3 (a preference), weights 1, 1 and 2.
func (e *env) experimentConfig() *config.Config {
	cfg := e.config()
	cfg.Experiments = []config.Experiment{{
		Name:   "ab",
		Models: []string{"single", "multi"},
		Key:    config.ExperimentKey{Header: "x-user", Parameter: "user_id"},
		Arms: []config.Arm{
			{Name: "plain", Weight: intp(1), Preference: "none"},
			{Name: "bheavy", Weight: intp(1), Preset: "b_first"},
			{Name: "even3", Weight: intp(2), Preference: "a=1,b=1,c=1"},
		},
	}}
	return cfg
}

// armWeights are the rounded weights of each arm, written by the test.
var armWeights = map[string][]float64{
	"plain":  nil,
	"bheavy": weights(0.2, 0.8, 0),
	"even3":  weights(0.333334, 0.333333, 0.333333),
}

// TestExperimentInfer serves keys through the multi model: each gets the
// arm package experiment assigns it, its W_p (checked against the float64
// reference), react-arm, and the heads' top-1 predictions.
func TestExperimentInfer(t *testing.T) {
	e := newEnv(t)
	set := e.mustBuild(t, e.experimentConfig())
	m := set.Models["multi"]
	split, err := experiment.NewSplit("ab", []experiment.Arm{{Name: "plain", Weight: 1}, {Name: "bheavy", Weight: 1}, {Name: "even3", Weight: 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range 24 {
		key := "user-" + strconv.Itoa(i)
		arm := split.Arms()[split.Assign(key)].Name
		seen[arm]++
		res, err := m.Infer(context.Background(), e.up, pipeline.Request{Proto: inferRequest("multi", batch), Header: control.Values{Key: key, HasKey: true}})
		if err != nil {
			t.Fatal(err)
		}
		params := res.Response.GetParameters()
		if got := params["react-arm"].GetStringParam(); got != arm || res.Choice.Arm != arm || res.Choice.Assignment != control.AssignKey {
			t.Errorf("key %s: react-arm %q, choice %+v, want arm %s", key, got, res.Choice, arm)
		}
		w := armWeights[arm]
		var ref [][]float64
		if w != nil {
			ref = e.sc.Reference(w, e.sc.Beta, false)
		}
		if len(res.Predictions) != len(tasks) {
			t.Fatalf("key %s: %d predictions, want one per head", key, len(res.Predictions))
		}
		for j, task := range tasks {
			ex := e.expect(task, "FP32", "FP32", ref, batch)
			logits, err := faketriton.Decode("FP32", res.Response.GetRawOutputContents()[j])
			if err != nil {
				t.Fatal(err)
			}
			if k := within(logits, ex.logits, ex.logitsTol); k >= 0 {
				t.Errorf("key %s (arm %s): %s logits %v, want %v", key, arm, task, logits, ex.logits)
			}
			// Top-1 from the float64 reference logits.
			p := res.Predictions[j]
			k := faketriton.HeadRows
			if name := res.Response.GetOutputs()[j].GetName(); p.Output != name || p.Classes != k {
				t.Errorf("key %s: prediction %d read from output %q of %d classes, want %q of %d", key, j, p.Output, p.Classes, name, k)
			}
			for r := range len(batch) / 3 {
				row := ex.logits[r*k : (r+1)*k]
				best, sum := 0, 0.0
				for c := range row {
					if row[c] > row[best] {
						best = c
					}
				}
				for c := range row {
					sum += math.Exp(row[c] - row[best])
				}
				if p.Task != task || p.Class[r] != best || math.Abs(p.Confidence[r]-1/sum) > 1e-4 {
					t.Errorf("key %s: %s row %d: class %d confidence %v, want %d %v", key, p.Task, r, p.Class[r], p.Confidence[r], best, 1/sum)
				}
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("24 keys reached arms %v, want all three", seen)
	}
}

// TestExperimentKeySources: the key as a string or integer parameter, the
// header before the parameter, an override, a bad key parameter.
func TestExperimentKeySources(t *testing.T) {
	e := newEnv(t)
	set := e.mustBuild(t, e.experimentConfig())
	m := set.Models["single"]
	split, _ := experiment.NewSplit("ab", []experiment.Arm{{Name: "plain", Weight: 1}, {Name: "bheavy", Weight: 1}, {Name: "even3", Weight: 2}}, 1)
	armOf := func(k string) string { return split.Arms()[split.Assign(k)].Name }

	infer := func(hdr control.Values, params map[string]*tritonpb.InferParameter) (*pipeline.Result, error) {
		req := inferRequest("single", batch)
		req.Parameters = params
		return m.Infer(context.Background(), e.up, pipeline.Request{Proto: req, Header: hdr})
	}
	for i := range 12 {
		n := int64(1000 + i)
		res, err := infer(control.Values{}, map[string]*tritonpb.InferParameter{"user_id": {ParameterChoice: &tritonpb.InferParameter_Int64Param{Int64Param: n}}})
		if err != nil {
			t.Fatal(err)
		}
		if want := armOf(strconv.FormatInt(n, 10)); res.Choice.Arm != want {
			t.Errorf("integer key %d: arm %s, want %s", n, res.Choice.Arm, want)
		}
		// The key parameter still reaches Triton: it is the client's.
		if got := e.fake.LastRequest("backbone").GetParameters()["user_id"].GetInt64Param(); got != n {
			t.Errorf("backbone got user_id %d, want %d", got, n)
		}
		key := "u" + strconv.Itoa(i)
		res, err = infer(control.Values{Key: key, HasKey: true}, map[string]*tritonpb.InferParameter{"user_id": stringParam("someone-else")})
		if err != nil {
			t.Fatal(err)
		}
		if want := armOf(key); res.Choice.Arm != want {
			t.Errorf("header key %s: arm %s, want %s (the header comes first)", key, res.Choice.Arm, want)
		}
	}

	res, err := infer(control.Values{Key: "u1", HasKey: true, Preference: "c=1", HasPreference: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choice.Assignment != control.AssignOverride || res.Choice.Experiment != "ab" || res.Choice.Arm != "" || res.Predictions != nil {
		t.Errorf("override: %+v", res.Choice)
	}
	if _, ok := res.Response.GetParameters()["react-arm"]; ok {
		t.Error("an override echoes react-arm")
	}

	res, err = infer(control.Values{}, nil)
	if err != nil || res.Choice.Assignment != control.AssignRandom || res.Choice.Arm == "" {
		t.Errorf("keyless: %+v, %v", res.Choice, err)
	}

	_, err = infer(control.Values{}, map[string]*tritonpb.InferParameter{"user_id": {ParameterChoice: &tritonpb.InferParameter_BoolParam{BoolParam: true}}})
	if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != `model "single": parameter "user_id", the experiment key, must be a string or an integer` {
		t.Errorf("boolean key: %v", err)
	}
}

// TestExperimentBuildProblems: an arm whose preference does not fit the
// components' tasks is named by its path, once.
func TestExperimentBuildProblems(t *testing.T) {
	e := newEnv(t)
	cfg := e.experimentConfig()
	cfg.Experiments[0].Arms[2].Preference = "a=1,zz=1"
	_, err := e.build(cfg)
	var be problem.List
	if !errors.As(err, &be) || len(be) != 1 {
		t.Fatalf("Build: %v, want one problem", err)
	}
	p := be[0]
	if p.Path != "experiments[0].arms[2].preference" || p.Transient {
		t.Errorf("problem %+v", p)
	}
	t.Log(p.Msg)
}
