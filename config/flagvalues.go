package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Float64ListVar registers on fs a flag holding a list of numbers in p,
// comma-separated and repeatable as pflag's Float64SliceVar, whose value
// is written in the shortest form that reads back to the same numbers:
// pflag's writes six decimals (1e-7 as 0.000000), which --print-config
// would carry into its file.
func Float64ListVar(fs *pflag.FlagSet, p *[]float64, name string, value []float64, usage string) {
	*p = value
	fs.Var(&float64List{p: p}, name, usage)
}

// float64List is the pflag.Value of Float64ListVar.
type float64List struct {
	p       *[]float64
	changed bool // a Set replaces the default, later ones append
}

var _ pflag.SliceValue = (*float64List)(nil)

func (l *float64List) Set(s string) error {
	items, err := parseFloats(strings.Split(s, ","))
	if err != nil {
		return err
	}
	if !l.changed {
		*l.p = items
	} else {
		*l.p = append(*l.p, items...)
	}
	l.changed = true
	return nil
}

// Type is pflag's name for a list of float64, so that the engine parses
// and prints the flag's values as numbers.
func (l *float64List) Type() string { return "float64Slice" }

func (l *float64List) String() string { return "[" + strings.Join(l.GetSlice(), ",") + "]" }

func (l *float64List) Append(s string) error {
	items, err := parseFloats([]string{s})
	if err == nil {
		*l.p = append(*l.p, items...)
	}
	return err
}

func (l *float64List) Replace(ss []string) error {
	items, err := parseFloats(ss)
	if err == nil {
		*l.p = items
	}
	return err
}

func (l *float64List) GetSlice() []string {
	out := make([]string, len(*l.p))
	for i, x := range *l.p {
		out[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return out
}

// parseFloats parses each of ss as a number.
func parseFloats(ss []string) ([]float64, error) {
	out := make([]float64, len(ss))
	for i, s := range ss {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want a number", s)
		}
		out[i] = x
	}
	return out, nil
}

// aliasAnnotation marks a flag of DeprecatedAlias.
const aliasAnnotation = "react-deprecated-alias"

// DeprecatedAlias registers old on fs as the deprecated spelling of the
// flag name, registered already: hidden from the help, it sets the same
// value, is no key of a file or of the environment (the engine knows the
// flag by its one name), and each use writes notice to w, the command's
// standard error. pflag's MarkDeprecated would have cobra print its notice
// on the command's standard output, among the results.
func DeprecatedAlias(fs *pflag.FlagSet, old, name string, w io.Writer, notice string) {
	f := fs.Lookup(name)
	fs.Var(&aliasValue{Value: f.Value, w: w, notice: notice}, old, "")
	a := fs.Lookup(old)
	a.Hidden = true
	a.NoOptDefVal = f.NoOptDefVal
	a.Annotations = map[string][]string{aliasAnnotation: {name}}
}

// aliasValue is the value of a deprecated flag: the other flag's, with a
// notice when set.
type aliasValue struct {
	pflag.Value
	w      io.Writer
	notice string
}

func (a *aliasValue) Set(s string) error {
	fmt.Fprintln(a.w, a.notice)
	return a.Value.Set(s)
}

// isAlias reports whether f is a flag of DeprecatedAlias.
func isAlias(f *pflag.Flag) bool {
	_, ok := f.Annotations[aliasAnnotation]
	return ok
}
