package calibrate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/experiment"
	sidecarconfig "github.com/mergectl/react-triton/sidecar/config"
)

func newExperimentCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Check the A/B experiments of a sidecar configuration, and decide them",
		Long: `The sidecar splits the requests of an experiment's models over its arms
by a key each request carries (a user id), hashing the experiment's name
and the key with murmur3 x86_32. assign computes the same assignment
offline, so that a team can check it, or reproduce it in another language
(docs/sidecar.md has a short Python function). report reads the outcomes
the sidecars counted per arm and says whether an arm is better or worse
than the control, with statistics that stay valid however often it is
run.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newExperimentAssignCommand(stdout), newExperimentReportCommand(stdout))
	return cmd
}

func newExperimentAssignCommand(stdout io.Writer) *cobra.Command {
	var name, arms, file, exp string
	var traffic float64
	cmd := &cobra.Command{
		Use:   "assign (--name EXP --arms A=W,... [--traffic SHARE] | --sidecar-config FILE --experiment EXP) < keys",
		Short: "Print the arm of each key read from standard input",
		Long: `assign reads keys from standard input, one a line (a trailing carriage
return is dropped), and prints "key<TAB>arm" for each, in order: the arm
the sidecar gives a request carrying that key. A key outside the
experiment's traffic share is printed with the arm "-": it gets the
default preference.

The arms come from the command line (--name, --arms in order with their
integer weights, --traffic), or from the experiment of a sidecar
configuration (--sidecar-config, --experiment), which is loaded and
checked as the sidecar loads it. --config is this command's own
configuration, as in every calibrate command.`,
		Example: `  printf 'alice\nbob\n' | calibrate experiment assign --name homepage --arms A=50,B=30,C=20
  calibrate experiment assign --sidecar-config sidecar.yaml --experiment fashion-weight < users.txt`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the experiment's `NAME` (part of every hashed key)")
	f.StringVar(&arms, "arms", "", "the `ARMS` in order with their integer weights, such as A=50,B=30,C=20")
	f.Float64Var(&traffic, "traffic", 1, "the `SHARE` of keys that take part, in (0, 1]")
	f.StringVar(&file, flagSidecarConfig, "", "a sidecar configuration `FILE` to read the experiment from")
	f.StringVar(&exp, "experiment", "", "the experiment's `NAME` in --sidecar-config")
	run := layered(cmd, assignFlags, stdout, nil, func(cmd *cobra.Command, _ []string) error {
		split, err := assignSplit(cmd, name, arms, traffic, file, exp)
		if err != nil {
			return err
		}
		return assignKeys(cmd.InOrStdin(), stdout, split)
	})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := run(cmd, args); err != nil {
			return withSidecarHint(err, cmd.Flags())
		}
		return nil
	}
	return cmd
}

// flagSidecarConfig names the sidecar configuration assign reads an
// experiment from; before, it was --config, which every calibrate command
// now gives its own configuration.
const flagSidecarConfig = "sidecar-config"

// assignFlags are assign's keys: --traffic, left out, is the experiment's
// own with --sidecar-config (null in --print-config).
var assignFlags = config.CommandFlags{Paths: []string{flagSidecarConfig}, Unset: []string{"traffic"}}

// withSidecarHint adds to an error of loading --config FILE, when FILE is
// a sidecar configuration, that --sidecar-config now takes it.
func withSidecarHint(err error, fs *pflag.FlagSet) error {
	path, _ := fs.GetString(config.FlagConfig)
	if path == "" || !isSidecarConfig(path) {
		return err
	}
	return usagef("%v\n--config %s is a sidecar configuration: give it with --sidecar-config (--config is this command's own configuration)", err, path)
}

// isSidecarConfig reports whether the YAML file at path has the sidecar's
// experiments or components section, which assign's own configuration
// never has.
func isSidecarConfig(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, experiments := top["experiments"]
	_, components := top["components"]
	return experiments || components
}

// assignSplit makes the split the flags describe.
func assignSplit(cmd *cobra.Command, name, arms string, traffic float64, file, exp string) (*experiment.Split, error) {
	inline, fromConfig := name != "" || arms != "", file != "" || exp != ""
	switch {
	case inline && fromConfig:
		return nil, usagef("give --name and --arms, or --sidecar-config and --experiment, not both")
	case fromConfig && cmd.Flags().Changed("traffic"):
		return nil, usagef("--traffic goes with --arms; with --sidecar-config the experiment's own applies")
	case fromConfig && (file == "" || exp == ""):
		return nil, usagef("--sidecar-config and --experiment go together")
	case fromConfig:
		return configSplit(file, exp)
	case name == "" || arms == "":
		return nil, usagef("give --name and --arms (or --sidecar-config and --experiment)")
	}
	a, err := experiment.ParseArms(arms)
	if err != nil {
		return nil, usagef("--arms: %v", err)
	}
	s, err := experiment.NewSplit(name, a, traffic)
	if err != nil {
		return nil, usagef("--arms %s --traffic %v: %v", arms, traffic, err)
	}
	return s, nil
}

// configSplit reads the split of experiment exp from a sidecar
// configuration.
func configSplit(file, exp string) (*experiment.Split, error) {
	e, err := configExperiment(file, exp)
	if err != nil {
		return nil, err
	}
	arms := make([]experiment.Arm, len(e.Arms))
	for i, a := range e.Arms {
		arms[i] = experiment.Arm{Name: a.Name, Weight: *a.Weight}
	}
	traffic := 1.0
	if e.Traffic != nil {
		traffic = *e.Traffic
	}
	return experiment.NewSplit(e.Name, arms, traffic)
}

// configExperiment reads experiment exp of a sidecar configuration,
// loaded and checked as the sidecar loads it.
func configExperiment(file, exp string) (*sidecarconfig.Experiment, error) {
	cfg, err := sidecarconfig.Load(file, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for i, e := range cfg.Experiments {
		if e.Name == exp {
			return &cfg.Experiments[i], nil
		}
		names = append(names, e.Name)
	}
	have := "none"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("%s has no experiment %q (experiments: %s)", file, exp, have)
}

// assignKeys prints "key<TAB>arm" for each line of in.
func assignKeys(in io.Reader, out io.Writer, s *experiment.Split) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	w := bufio.NewWriter(out)
	arms := s.Arms()
	for sc.Scan() {
		key := strings.TrimSuffix(sc.Text(), "\r")
		arm := "-"
		if i := s.Assign(key); i >= 0 {
			arm = arms[i].Name
		}
		w.WriteString(key)
		w.WriteByte('\t')
		w.WriteString(arm)
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading keys: %w", err)
	}
	return w.Flush()
}
