// Command alerteval evaluates Prometheus alerting rule files on series
// given as a promqltest load script, with Prometheus' rule manager and
// PromQL engine (package alerteval), and prints the alerts active after
// the last evaluation as JSON, one alert a line (nothing when none is):
//
//	alerteval -rules docker/prometheus-rules.yml -series window.load T0 T1 ...
//
// The load script's first sample is at T0, and the rules are evaluated at
// each T in turn, as a Prometheus whose evaluations follow its scrapes;
// the times are Unix milliseconds. tests/test_sidecar_sampling.py writes
// two scrapes of a sidecar's /metrics as such a script (load <T1-T0>ms,
// each series' values at the two scrapes) and reads the alerts.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/mergectl/react-triton/docker/deploytest/alerteval"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the command with its arguments, printing to stdout.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("alerteval", flag.ContinueOnError)
	var files []string
	fs.Func("rules", "a Prometheus rule file (repeatable)", func(s string) error {
		files = append(files, s)
		return nil
	})
	seriesFile := fs.String("series", "", "the series: a promqltest load script")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(files) == 0 || *seriesFile == "" || fs.NArg() == 0 {
		return errors.New("usage: alerteval -rules FILE -series LOADFILE T0 [T...] (Unix milliseconds)")
	}
	var times []time.Time
	for _, a := range fs.Args() {
		ms, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return fmt.Errorf("alerteval: time %q: want Unix milliseconds", a)
		}
		times = append(times, time.UnixMilli(ms))
	}
	load, err := os.ReadFile(*seriesFile)
	if err != nil {
		return fmt.Errorf("alerteval: %w", err)
	}
	evals, err := alerteval.Evaluate(string(load), times[0], files, times)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, a := range evals[len(evals)-1] {
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("alerteval: %w", err)
		}
	}
	return nil
}
