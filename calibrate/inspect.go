package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// inspectReport is what calibrate inspect prints; its JSON form is the
// output of --json.
type inspectReport struct {
	File          string       `json:"file"`
	FormatVersion int          `json:"format_version"`
	D             int          `json:"d"`
	Beta          float64      `json:"beta"`
	Normalization string       `json:"normalization"`
	Backbone      modelJSON    `json:"backbone"`
	Tasks         []taskReport `json:"tasks"`
	Checksum      checksumInfo `json:"checksum"`
	// MetadataChecksum is the status of the header's metadata_sha256.
	MetadataChecksum checksumInfo `json:"metadata_checksum"`
	// Error is why the statistics could not be loaded, if they could not.
	Error string `json:"error,omitempty"`
}

type modelJSON struct {
	Model   string `json:"model"`
	Version string `json:"version"`
	Output  string `json:"output"`
}

type taskReport struct {
	Name   string    `json:"name"`
	N      int64     `json:"n"`
	Expert modelJSON `json:"expert"`
	// Cond is the 2-norm condition number of C_t at the file's default β
	// and normalisation; null when it could not be computed or is infinite.
	Cond *float64 `json:"cond"`
	// ReconError is the relative reconstruction error of the task's own
	// correction on its calibration samples at the file's defaults, as
	// recorded (the sidecar's staleness reference); absent when not.
	ReconError *float64 `json:"recon_error,omitempty"`
	// Provenance is how the statistics were computed, such as the subset
	// of samples calibrate fit drew (subset.fraction or subset.limit,
	// subset.seed, subset.available, subset.used); absent when not
	// recorded.
	Provenance map[string]string `json:"provenance,omitempty"`
}

type checksumInfo struct {
	SHA256 string `json:"sha256"` // as recorded in the file
	// CRC32C is the data's CRC-32C as recorded, the checksum verified when
	// present (files written before 2026-11 have only the SHA-256).
	CRC32C string `json:"crc32c,omitempty"`
	OK     bool   `json:"ok"` // whether the data matches the checksum verified
}

func newInspectCommand(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show what a components file holds and check its integrity",
		Long: `inspect prints what a components file holds: its tasks with their
number of calibration samples N_t and their experts, the feature dimension
D, the default β and normalisation, the merged backbone, and, for each task,
the condition number of C_t = G_t + β I at the file's defaults and which of
its samples the statistics hold (all, or the random subset of calibrate fit
--fraction or --limit: how many of how many, and the seed). A task whose
condition number exceeds ` + formatFloat(react.WarnCondition) + ` gets a warning: β is too small for
the data, and a W_p solved with it would be dominated by sampling noise
(calibrate solve warns at the same limit). inspect also verifies the
checksums: of the statistics (their CRC-32C, or their SHA-256 in files
written before CRC-32C was recorded), and of the metadata in the header
(SHA-256).

A corrupt file still gets what can be read of it printed, then the problem,
and inspect exits with status 1.`,
		Example: `  calibrate inspect components.safetensors
  calibrate inspect --json components.safetensors | jq '.tasks[].cond'`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return inspect(stdout, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object instead of text")
	return cmd
}

// exactArgs is cobra.ExactArgs with a friendlier message.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %d argument(s), got %d", cmd.Name(), n, len(args))
		}
		return nil
	}
}

func modelRef(m react.ModelRef) modelJSON {
	return modelJSON{Model: m.Name, Version: m.Version, Output: m.Output}
}

func inspect(w io.Writer, path string, asJSON bool) error {
	info, err := componentsfile.ReadInfo(path)
	if err != nil {
		return err
	}
	r := &inspectReport{
		File:             path,
		FormatVersion:    info.FormatVersion,
		D:                info.D,
		Beta:             info.Beta,
		Normalization:    string(info.Normalization),
		Backbone:         modelRef(info.Backbone),
		Checksum:         checksumInfo{SHA256: info.SHA256, CRC32C: info.CRC32C},
		MetadataChecksum: checksumInfo{SHA256: info.MetadataSHA256, OK: info.MetadataOK},
	}
	for _, t := range info.Tasks {
		tr := taskReport{Name: t.Name, N: t.N, Expert: modelRef(t.Expert), Provenance: t.Provenance}
		if t.ReconError > 0 {
			tr.ReconError = &t.ReconError
		}
		r.Tasks = append(r.Tasks, tr)
	}
	c, loadErr := componentsfile.Load(path)
	r.Checksum.OK = !errors.Is(loadErr, componentsfile.ErrChecksum)
	if loadErr == nil {
		s, err := react.NewSolver(c, react.DefaultOptions(c))
		if err != nil {
			loadErr = err
		} else {
			for i := range r.Tasks {
				k, err := s.Condition(r.Tasks[i].Name)
				if err != nil {
					loadErr = err
					break
				}
				if !math.IsInf(k, 0) && !math.IsNaN(k) {
					r.Tasks[i].Cond = &k
				}
			}
		}
	}
	if loadErr != nil {
		r.Error = loadErr.Error()
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printReport(w, r)
	}
	return loadErr
}

func describeModel(m modelJSON) string {
	if m == (modelJSON{}) {
		return "-"
	}
	s := m.Model
	if s == "" {
		s = "(unnamed)"
	}
	if m.Version != "" {
		s += " version " + m.Version
	}
	if m.Output != "" {
		s += " output " + m.Output
	}
	return s
}

func printReport(w io.Writer, r *inspectReport) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "file:\t%s\n", r.File)
	fmt.Fprintf(tw, "format:\treact-components version %d\n", r.FormatVersion)
	fmt.Fprintf(tw, "D:\t%d\n", r.D)
	fmt.Fprintf(tw, "beta:\t%s\n", formatFloat(r.Beta))
	fmt.Fprintf(tw, "normalization:\t%s\n", r.Normalization)
	fmt.Fprintf(tw, "backbone:\t%s\n", describeModel(r.Backbone))
	status := "ok"
	if !r.Checksum.OK {
		status = "MISMATCH: file is corrupt"
	}
	if r.Checksum.CRC32C != "" {
		fmt.Fprintf(tw, "checksum:\t%s (crc32c %s; sha256 %s)\n", status, r.Checksum.CRC32C, r.Checksum.SHA256)
	} else {
		fmt.Fprintf(tw, "checksum:\t%s (sha256 %s)\n", status, r.Checksum.SHA256)
	}
	status = "ok"
	if !r.MetadataChecksum.OK {
		status = "MISMATCH: the header was edited or is corrupt"
	}
	fmt.Fprintf(tw, "metadata checksum:\t%s (sha256 %s)\n", status, r.MetadataChecksum.SHA256)
	fmt.Fprintf(tw, "tasks:\t%d\n", len(r.Tasks))
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "TASK\tN\tEXPERT\tCOND(C_t)\tSAMPLES\n")
	for _, t := range r.Tasks {
		cond := "-"
		if t.Cond != nil {
			cond = fmt.Sprintf("%.6g", *t.Cond)
		} else if r.Error == "" {
			cond = "inf"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.Name, t.N, describeModel(t.Expert), cond, describeSubset(t.Provenance))
	}
	tw.Flush()
	for _, t := range r.Tasks {
		if t.ReconError != nil {
			fmt.Fprintf(w, "task %s: recorded reconstruction error = %.6g\n", t.Name, *t.ReconError)
		}
		for _, k := range slices.Sorted(maps.Keys(t.Provenance)) {
			if !strings.HasPrefix(k, "subset.") {
				fmt.Fprintf(w, "task %s: %s = %s\n", t.Name, k, t.Provenance[k])
			}
		}
	}
	for _, t := range r.Tasks {
		if t.Cond == nil && r.Error == "" || t.Cond != nil && *t.Cond > react.WarnCondition {
			fmt.Fprintf(w, "\nwarning: task %s: COND(C_t) > %s: %s\n", t.Name, formatFloat(react.WarnCondition), conditionAdvice(react.Normalization(r.Normalization)))
		}
	}
}

// describeSubset says which of a task's samples its statistics hold, from
// its subset provenance: "all" when none was drawn, else for example "100
// of 1000 (limit 100, seed 0)".
func describeSubset(p map[string]string) string {
	used, ok := p["subset.used"]
	if !ok {
		return "all"
	}
	var how []string
	if f, ok := p["subset.fraction"]; ok {
		how = append(how, "fraction "+f)
	}
	if l, ok := p["subset.limit"]; ok {
		how = append(how, "limit "+l)
	}
	if s, ok := p["subset.seed"]; ok {
		how = append(how, "seed "+s)
	}
	s := used
	if a, ok := p["subset.available"]; ok {
		s += " of " + a
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

// conditionAdvice is what calibrate inspect and solve say about a C_p or
// C_t whose condition number exceeds react.WarnCondition.
func conditionAdvice(norm react.Normalization) string {
	advice := "β is too small for the data, so W_p is dominated by sampling noise in the calibration statistics; increase β (--beta)"
	if norm == react.NormMean {
		advice += ", remembering that with the mean normalisation β is relative to per-sample second moments"
	}
	return advice
}
