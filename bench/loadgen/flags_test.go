package main

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsInfer(t *testing.T) {
	c, err := parseFlags([]string{
		"-addr", "127.0.0.1:8001", "-model", "fashion", "-input", "image:1,28,28",
		"-concurrency", "8", "-duration", "3s", "-warmup", "500ms",
		"-metadata", "React-Preference=fashion=0.6,mnist=0.4", "-metadata", "x-trace=1",
		"-param", "k=v=w", "-label", "sidecar",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := &config{
		addr: "127.0.0.1:8001", mode: modeInfer, model: "fashion",
		inputs: []inputSpec{{"image", []int64{1, 28, 28}}},
		batch:  1, concurrency: 8, conns: 1, duration: 3 * time.Second, warmup: 500 * time.Millisecond,
		// Keys are lower-cased (gRPC metadata keys are); values keep
		// everything after the first '='.
		metadata: []keyValue{{"react-preference", "fashion=0.6,mnist=0.4"}, {"x-trace", "1"}},
		params:   []keyValue{{"k", "v=w"}},
		label:    "sidecar", seed: 1,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parseFlags:\n got %+v\nwant %+v", c, want)
	}
	if got := c.models(); !reflect.DeepEqual(got, []string{"fashion"}) {
		t.Errorf("models() = %v", got)
	}
}

func TestParseFlagsTwoCall(t *testing.T) {
	c, err := parseFlags([]string{
		"-addr", "h:1", "-mode", "twocall", "-backbone", "synth_backbone", "-feature", "feature",
		"-head", "synth_head", "-input", "x:768", "-input", "ns:scoped:2,3", "-batch", "4", "-conns", "2",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.headInput != "feature" {
		t.Errorf("headInput = %q, want the feature's name", c.headInput)
	}
	wantInputs := []inputSpec{{"x", []int64{768}}, {"ns:scoped", []int64{2, 3}}}
	if !reflect.DeepEqual(c.inputs, wantInputs) {
		t.Errorf("inputs = %+v, want %+v", c.inputs, wantInputs)
	}
	if c.batch != 4 || c.conns != 2 {
		t.Errorf("batch, conns = %d, %d", c.batch, c.conns)
	}
	if got := c.models(); !reflect.DeepEqual(got, []string{"synth_backbone", "synth_head"}) {
		t.Errorf("models() = %v", got)
	}
	if got := c.inputs[1].String(); got != "ns:scoped:2,3" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	base := []string{"-addr", "h:1", "-model", "m", "-input", "x:4"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-model", "m", "-input", "x:4"}, "-addr is required"},
		{[]string{"-addr", "h:1", "-model", "m"}, "at least one -input"},
		{[]string{"-addr", "h:1", "-input", "x:4"}, "needs -model"},
		{append(base, "-mode", "stream"), `-mode "stream"`},
		{append(base, "-mode", "twocall"), "needs -backbone"},
		{append(base, "-mode", "pair", "-backbone", "b"), "-mode pair needs -backbone and -expert"},
		{append(base, "-mode", "pair", "-backbone", "b", "-expert", "e", "-head", "h"), "not for -mode pair"},
		{append(base, "-model", "m", "-expert", "e"), "are for -mode twocall or pair"},
		{append(base, "-head", "h"), "are for -mode twocall"},
		{[]string{"-addr", "h:1", "-mode", "twocall", "-backbone", "b", "-feature", "f", "-head", "h", "-model", "m", "-input", "x:4"}, "-model is for"},
		{append(base, "-batch", "0"), "-batch"},
		{append(base, "-concurrency", "0"), "-concurrency"},
		{append(base, "-conns", "0"), "-conns"},
		{append(base, "-duration", "0s"), "-duration"},
		{append(base, "-warmup", "-1s"), "-warmup"},
		{append(base, "extra"), "unexpected arguments"},
		{append(base, "-input", "x:5"), `input "x" given twice`},
		{append(base, "-input", "y"), "want NAME:DIMS"},
		{append(base, "-input", ":3"), "want NAME:DIMS"},
		{append(base, "-input", "y:"), "want NAME:DIMS"},
		{append(base, "-input", "y:2,0"), "not a positive integer"},
		{append(base, "-input", "y:2,a"), "not a positive integer"},
		{append(base, "-input", "y:65536,65536"), "2^28"},
		{append(base, "-metadata", "novalue"), "want KEY=VALUE"},
		{append(base, "-param", "=v"), "want KEY=VALUE"},
		{append(base, "-duration", "10"), "invalid value"},
	}
	for _, tt := range tests {
		var out strings.Builder
		_, err := parseFlags(tt.args, &out)
		if err == nil {
			t.Errorf("%q: no error, want one about %q", tt.args, tt.want)
			continue
		}
		if !strings.Contains(out.String(), tt.want) && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %q, output %q; want %q", tt.args, err, out.String(), tt.want)
		}
	}
	if _, err := parseFlags([]string{"-help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: error %v, want flag.ErrHelp", err)
	}
}
