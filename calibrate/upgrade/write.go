package upgrade

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/mergectl/react-triton/internal/atomicfile"
)

// Describe prints the plan of a dry run: the files it would write and the
// ensemble's diff.
func (p *Plan) Describe(w io.Writer, o *Options) error {
	dir := filepath.Join(o.Repository, p.React)
	if p.reactConfig != nil {
		fmt.Fprintf(w, "would write %s:\n%s\n", filepath.Join(dir, "config.pbtxt"), p.reactConfig)
	}
	fmt.Fprintf(w, "would write %s (a copy of %s)\n", filepath.Join(dir, strconv.Itoa(p.Version), "components.safetensors"), o.Components)
	if p.ensembleNew == nil {
		fmt.Fprintf(w, "%s has its react step already: unchanged\n", p.EnsemblePath)
		return nil
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(p.ensembleOld)), B: difflib.SplitLines(string(p.ensembleNew)),
		FromFile: p.EnsemblePath, ToFile: p.EnsemblePath + " (upgraded)", Context: 3,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "would rewrite %s (keeping the original as config.pbtxt.orig):\n%s", p.EnsemblePath, diff)
	return nil
}

// write writes the plan: the react model first, the ensemble last. A new
// react model, or a new version of one, appears whole: it is made in a
// staging directory beside the repository and renamed into it, so that a
// Triton polling the repository never sees a model or a version without
// its configuration or components file (it would fail to load it, and a
// failed load makes the server not ready). The ensemble's configuration
// is replaced atomically.
func (p *Plan) Write(o *Options) (err error) {
	repo, err := filepath.Abs(o.Repository)
	if err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(repo), "."+filepath.Base(repo)+".upgrade-")
	if err != nil {
		return fmt.Errorf("staging beside the repository (the new model must appear in it whole): %w", err)
	}
	defer os.RemoveAll(stage)
	version := strconv.Itoa(p.Version)
	dir := filepath.Join(repo, p.React)
	staged, target := filepath.Join(stage, version), filepath.Join(dir, version)
	if p.reactConfig != nil {
		staged, target = filepath.Join(stage, p.React), dir
		if err := os.MkdirAll(staged, 0o755); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(staged, "config.pbtxt"), p.reactConfig); err != nil {
			return err
		}
	}
	vdir := filepath.Join(stage, version)
	if p.reactConfig != nil {
		vdir = filepath.Join(staged, version)
	}
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(o.Components)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := atomicfile.Write(filepath.Join(vdir, "components.safetensors"), 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return err
	}
	if err := os.Rename(staged, target); err != nil {
		return fmt.Errorf("moving the react model into the repository: %w", err)
	}
	if p.ensembleNew == nil {
		return nil
	}
	orig := p.EnsemblePath + ".orig"
	if _, err := os.Stat(orig); errors.Is(err, fs.ErrNotExist) {
		if err := writeFile(orig, p.ensembleOld); err != nil {
			return err
		}
	}
	return writeFile(p.EnsemblePath, p.ensembleNew)
}

func writeFile(path string, data []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
