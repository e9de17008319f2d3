package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Modes of the load generator.
const (
	modeInfer   = "infer"
	modeTwoCall = "twocall"
	modePair    = "pair"
)

// config is a parsed and checked command line.
type config struct {
	addr string
	mode string

	// model is the model called in infer mode.
	model string
	// backbone, feature, head and headInput describe twocall mode: the
	// backbone's output feature is sent as the head's input headInput.
	backbone, feature, head, headInput string
	// expert is, in pair mode, the model sent the same batch as backbone
	// at the same time.
	expert string

	inputs      []inputSpec
	batch       int
	concurrency int
	conns       int
	duration    time.Duration
	warmup      time.Duration
	metadata    []keyValue
	params      []keyValue
	label       string
	seed        uint64
}

// inputSpec is one -input flag: an FP32 input's name and its shape without
// the batch dimension.
type inputSpec struct {
	name string
	dims []int64
}

// String formats s as the flag takes it, NAME:D1,D2,...
func (s inputSpec) String() string {
	dims := make([]string, len(s.dims))
	for i, d := range s.dims {
		dims[i] = strconv.FormatInt(d, 10)
	}
	return s.name + ":" + strings.Join(dims, ",")
}

// elements is the number of values of one sample of s.
func (s inputSpec) elements() int64 {
	n := int64(1)
	for _, d := range s.dims {
		n *= d
	}
	return n
}

// parseInputSpec parses NAME:D1,D2,... (the name may itself hold colons:
// the dimensions follow the last one).
func parseInputSpec(v string) (inputSpec, error) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 || i == len(v)-1 {
		return inputSpec{}, fmt.Errorf("%q: want NAME:DIMS, e.g. image:1,28,28", v)
	}
	s := inputSpec{name: v[:i]}
	for _, f := range strings.Split(v[i+1:], ",") {
		d, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || d <= 0 {
			return inputSpec{}, fmt.Errorf("%q: dimension %q is not a positive integer", v, f)
		}
		s.dims = append(s.dims, d)
	}
	if s.elements() > 1<<28 {
		return inputSpec{}, fmt.Errorf("%q: more than 2^28 values per sample", v)
	}
	return s, nil
}

// inputList is the repeatable -input flag.
type inputList []inputSpec

// String implements flag.Value.
func (l *inputList) String() string {
	parts := make([]string, len(*l))
	for i, s := range *l {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// Set implements flag.Value.
func (l *inputList) Set(v string) error {
	s, err := parseInputSpec(v)
	if err != nil {
		return err
	}
	for _, old := range *l {
		if old.name == s.name {
			return fmt.Errorf("input %q given twice", s.name)
		}
	}
	*l = append(*l, s)
	return nil
}

// keyValue is one k=v of a repeatable flag.
type keyValue struct{ key, value string }

// keyValueList is a repeatable k=v flag; the value may hold '=' (it
// starts after the first one).
type keyValueList struct {
	items []keyValue
	// lower makes keys lower case (gRPC metadata keys are).
	lower bool
}

// String implements flag.Value.
func (l *keyValueList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l.items))
	for i, kv := range l.items {
		parts[i] = kv.key + "=" + kv.value
	}
	return strings.Join(parts, " ")
}

// Set implements flag.Value.
func (l *keyValueList) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	if l.lower {
		k = strings.ToLower(k)
	}
	l.items = append(l.items, keyValue{k, val})
	return nil
}

// usageText heads the -help output.
const usageText = `loadgen: a closed-loop gRPC load generator for Triton's ModelInfer.

  loadgen -addr HOST:PORT -mode infer -model M -input NAME:DIMS [flags]
  loadgen -addr HOST:PORT -mode twocall -backbone B -feature OUT -head H -input NAME:DIMS [flags]
  loadgen -addr HOST:PORT -mode pair -backbone B -expert E -input NAME:DIMS [flags]

-concurrency workers each send one request, wait for its answer and send the
next, for -warmup and then -duration; only requests started after the warmup
are measured. Prints one JSON line with throughput and latency percentiles.

Flags:
`

// parseFlags parses and checks the command line (without the program
// name). It writes usage and flag errors to stderr; the error it returns
// is flag.ErrHelp for -help.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	var (
		c        config
		inputs   inputList
		metadata = keyValueList{lower: true}
		params   keyValueList
	)
	fs.StringVar(&c.addr, "addr", "", "the server's gRPC address, HOST:PORT (required)")
	fs.StringVar(&c.mode, "mode", modeInfer, "infer (one call of -model), twocall (-backbone, then -head with its output) or pair (-backbone and -expert at once, with the same input)")
	fs.StringVar(&c.model, "model", "", "infer: the model to call")
	fs.StringVar(&c.backbone, "backbone", "", "twocall: the model called first; pair: one of the two")
	fs.StringVar(&c.expert, "expert", "", "pair: the model called with the same input as -backbone, at the same time")
	fs.StringVar(&c.feature, "feature", "", "twocall: the backbone's output sent on to the head; pair: the one output both models are asked for (default: all)")
	fs.StringVar(&c.head, "head", "", "twocall: the model called with the backbone's output")
	fs.StringVar(&c.headInput, "head-input", "", "twocall: the head's input that receives the feature (default: the -feature name)")
	fs.Var(&inputs, "input", "an FP32 input and its shape without the batch dimension, NAME:DIMS, e.g. image:1,28,28 (repeatable; random data)")
	fs.IntVar(&c.batch, "batch", 1, "samples per request (the batch dimension)")
	fs.IntVar(&c.concurrency, "concurrency", 1, "requests in flight (workers)")
	fs.IntVar(&c.conns, "conns", 1, "gRPC connections the workers share, round robin")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "how long to send unmeasured requests first")
	fs.Var(&metadata, "metadata", "gRPC metadata sent with every call, KEY=VALUE (repeatable)")
	fs.Var(&params, "param", "string request parameter of every request, KEY=VALUE (repeatable)")
	fs.StringVar(&c.label, "label", "", "copied to the output, to tell runs apart")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the random input data")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError(fs, "unexpected arguments %q", fs.Args())
	}
	c.inputs, c.metadata, c.params = inputs, metadata.items, params.items

	switch {
	case c.addr == "":
		return nil, usageError(fs, "-addr is required")
	case len(c.inputs) == 0:
		return nil, usageError(fs, "at least one -input is required")
	case c.batch < 1:
		return nil, usageError(fs, "-batch must be at least 1")
	case c.concurrency < 1:
		return nil, usageError(fs, "-concurrency must be at least 1")
	case c.conns < 1:
		return nil, usageError(fs, "-conns must be at least 1")
	case c.duration <= 0:
		return nil, usageError(fs, "-duration must be positive")
	case c.warmup < 0:
		return nil, usageError(fs, "-warmup must not be negative")
	}
	switch c.mode {
	case modeInfer:
		if c.model == "" {
			return nil, usageError(fs, "-mode infer needs -model")
		}
		if c.backbone != "" || c.head != "" || c.feature != "" || c.headInput != "" || c.expert != "" {
			return nil, usageError(fs, "-backbone, -feature, -head, -head-input and -expert are for -mode twocall or pair")
		}
	case modeTwoCall:
		if c.backbone == "" || c.feature == "" || c.head == "" {
			return nil, usageError(fs, "-mode twocall needs -backbone, -feature and -head")
		}
		if c.model != "" || c.expert != "" {
			return nil, usageError(fs, "-model is for -mode infer, -expert for -mode pair")
		}
		if c.headInput == "" {
			c.headInput = c.feature
		}
	case modePair:
		if c.backbone == "" || c.expert == "" {
			return nil, usageError(fs, "-mode pair needs -backbone and -expert")
		}
		if c.model != "" || c.head != "" || c.headInput != "" {
			return nil, usageError(fs, "-model, -head and -head-input are not for -mode pair")
		}
	default:
		return nil, usageError(fs, "-mode %q: want infer, twocall or pair", c.mode)
	}
	return &c, nil
}

// errUsage marks a command line that parsed but does not make sense.
var errUsage = errors.New("usage error")

// usageError reports a usage problem on fs's output and returns an error
// wrapping errUsage.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(fs.Output(), "loadgen: %s (see -help)\n", msg)
	return fmt.Errorf("%w: %s", errUsage, msg)
}

// models is the models a run calls, in call order.
func (c *config) models() []string {
	switch c.mode {
	case modeTwoCall:
		return []string{c.backbone, c.head}
	case modePair:
		return []string{c.backbone, c.expert}
	}
	return []string{c.model}
}
