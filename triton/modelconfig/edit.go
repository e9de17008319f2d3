package modelconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Parse reads a model configuration in the text format, with the fields
// tritonpb declares; the others are ignored.
func Parse(data []byte) (*tritonpb.ModelConfig, error) {
	cfg := &tritonpb.ModelConfig{}
	if err := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ReadFile reads and parses a config.pbtxt, returning its text too.
func ReadFile(path string) (*tritonpb.ModelConfig, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, data, nil
}

// Step is an ensemble step to insert: a model whose input Input takes a
// tensor and whose output Output gives the tensor that replaces it.
type Step struct {
	Model         string
	Version       int64 // -1: the server's choice
	Input, Output string
}

// InsertStep returns the text of an ensemble's configuration with step
// inserted on tensor: the step takes tensor, gives a new tensor named
// replacement, and every step that took tensor takes replacement instead.
// Nothing else of the text changes. The result is parsed again and checked
// against the same edit made to the parsed configuration.
func InsertStep(data []byte, tensor string, step Step, replacement string) ([]byte, error) {
	tree, err := parseText(data)
	if err != nil {
		return nil, err
	}
	ens := tree.messages("ensemble_scheduling")
	if len(ens) != 1 {
		return nil, errors.New("not an ensemble: no ensemble_scheduling")
	}
	steps := ens[0].messages("step")
	if len(steps) == 0 {
		return nil, errors.New("ensemble_scheduling has no step")
	}

	// The edits, as replacements of byte ranges, applied back to front.
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for _, s := range steps {
		for _, entry := range s.messages("input_map") {
			if v := entry.scalar("value"); v != nil {
				if got, ok := unquote(v); ok && got == tensor {
					edits = append(edits, edit{v.start, v.end, strconv.Quote(replacement)})
				}
			}
		}
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("no step takes tensor %q", tensor)
	}

	// Where the new step goes: at the end of the list of steps, or after
	// the last step field, indented as the steps are.
	last := steps[len(steps)-1]
	indent := lineIndent(data, last.open.start)
	inner := indent + "  "
	if len(last.fields) > 0 && bytes.IndexByte(data[last.open.start:last.fields[0].name.start], '\n') >= 0 {
		inner = lineIndent(data, last.fields[0].name.start)
	}
	body := fmt.Sprintf("{\n%smodel_name: %s\n%smodel_version: %d\n%sinput_map { key: %s, value: %s }\n%soutput_map { key: %s, value: %s }\n%s}",
		inner, strconv.Quote(step.Model), inner, step.Version,
		inner, strconv.Quote(step.Input), strconv.Quote(tensor),
		inner, strconv.Quote(step.Output), strconv.Quote(replacement), indent)
	var field *node
	for _, n := range ens[0].fields {
		if n.name.text == "step" {
			field = n
		}
	}
	if field.msg == nil { // step [ {...}, ... ]
		edits = append(edits, edit{last.close.end, last.close.end, ",\n" + indent + body})
	} else { // step { ... } step { ... }
		edits = append(edits, edit{last.close.end, last.close.end, "\n" + indent + "step " + body})
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(data)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}

	// The check: the edited text means the edited configuration.
	before, err := Parse(data)
	if err != nil {
		return nil, err
	}
	want := proto.Clone(before).(*tritonpb.ModelConfig)
	for _, s := range want.GetEnsembleScheduling().GetStep() {
		for k, v := range s.InputMap {
			if v == tensor {
				s.InputMap[k] = replacement
			}
		}
	}
	es := want.GetEnsembleScheduling()
	es.Step = append(es.Step, &tritonpb.ModelEnsembling_Step{ModelName: step.Model, ModelVersion: step.Version,
		InputMap: map[string]string{step.Input: tensor}, OutputMap: map[string]string{step.Output: replacement}})
	got, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("the edited configuration does not parse (%w):\n%s", err, out)
	}
	if !proto.Equal(got, want) {
		return nil, fmt.Errorf("the edited configuration is not the one intended:\n%s", out)
	}
	return out, nil
}

// lineIndent returns the whitespace that starts the line holding offset i.
func lineIndent(data []byte, i int) string {
	start := bytes.LastIndexByte(data[:i], '\n') + 1
	j := start
	for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
		j++
	}
	return string(data[start:j])
}
