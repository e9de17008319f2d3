package modelconfig

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// TestInsertStep inserts a react step on the embedding of an ensemble in
// each layout (a list of steps, repeated step fields) and compares the
// text with the golden one: comments, layout and the fields tritonpb does
// not declare stay as they were.
func TestInsertStep(t *testing.T) {
	for _, tc := range []struct {
		file, tensor string
	}{
		{"list_form.pbtxt", "feature"},
		{"repeated_form.pbtxt", "emb"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			out, err := InsertStep(data, tc.tensor, Step{Model: "react_x", Version: -1, Input: "feature", Output: "corrected"}, tc.tensor+"_corrected")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(tc.file, ".pbtxt")+".inserted.pbtxt")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if string(out) != string(want) {
				t.Errorf("got:\n%s\nwant (%s):\n%s", out, golden, want)
			}
			// Only the additions differ: every line of the original is there,
			// the rewired values aside.
			for _, l := range strings.Split(string(data), "\n") {
				if !strings.Contains(l, `"`+tc.tensor+`"`) && !strings.Contains(string(out), l) {
					t.Errorf("line %q lost", l)
				}
			}
		})
	}
}

func TestInsertStepRefuses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "repeated_form.pbtxt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text, tensor, want string
	}{
		{"no consumer", string(data), "scores", `no step takes tensor "scores"`},
		{"not an ensemble", `name: "m" backend: "onnxruntime"`, "x", "not an ensemble"},
		{"unterminated", `name: "m`, "x", "unterminated string"},
		{"unclosed", `ensemble_scheduling { step {`, "x", "unclosed message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InsertStep([]byte(tc.text), tc.tensor, Step{Model: "r", Version: -1, Input: "i", Output: "o"}, "new")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("InsertStep = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func FuzzParseText(f *testing.F) {
	for _, name := range []string{"list_form.pbtxt", "repeated_form.pbtxt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parseText(data) // no panic, whatever the input
		InsertStep(data, "feature", Step{Model: "r", Version: -1, Input: "i", Output: "o"}, "new")
	})
}
