package modelconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mergectl/react-triton/internal/testutil"
)

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
			testutil.Golden(t, filepath.Join("testdata", strings.TrimSuffix(tc.file, ".pbtxt")+".inserted.pbtxt"), out)
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

// FuzzParseText feeds arbitrary text to the parser and to InsertStep: no
// panic, and an edit that succeeds only adds to the text (the original is a
// subsequence of the result, since the replacement extends the tensor's
// name), parses, and has one step more.
func FuzzParseText(f *testing.F) {
	for _, name := range []string{"list_form.pbtxt", "repeated_form.pbtxt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "feature")
		f.Add(data, "emb")
	}
	f.Fuzz(func(t *testing.T, data []byte, tensor string) {
		parseText(data) // no panic, whatever the input
		out, err := InsertStep(data, tensor, Step{Model: "r", Version: -1, Input: "i", Output: "o"}, tensor+"_x")
		if err != nil {
			return
		}
		if !isSubsequence(data, out) {
			t.Fatalf("the edit changed the text, not only added to it:\n%s\n---\n%s", data, out)
		}
		before, err := Parse(data)
		if err != nil {
			t.Fatalf("InsertStep accepted a text that does not parse: %v", err)
		}
		after, err := Parse(out)
		if err != nil {
			t.Fatalf("the edited text does not parse: %v", err)
		}
		if n, m := len(before.GetEnsembleScheduling().GetStep()), len(after.GetEnsembleScheduling().GetStep()); m != n+1 {
			t.Fatalf("%d steps after the edit, want %d", m, n+1)
		}
	})
}

// isSubsequence reports whether a's bytes appear in b in order.
func isSubsequence(a, b []byte) bool {
	i := 0
	for _, c := range b {
		if i < len(a) && a[i] == c {
			i++
		}
	}
	return i == len(a)
}
