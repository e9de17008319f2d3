package tritonpairs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mergectl/react-triton/react"
)

// DiscoverInputs lists the tasks of dir, sorted: those with a <task>.npy
// or <task>.npz file, and the folders whose name is a valid task name
// (<task>/, images). A task with two of them is an error.
func DiscoverInputs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var tasks []string
	for _, e := range entries {
		name, isFile := strings.CutSuffix(e.Name(), InputSuffix)
		if !isFile {
			name, isFile = strings.CutSuffix(e.Name(), ArchiveSuffix)
		}
		switch {
		case isFile && !e.IsDir():
			if err := react.ValidateTaskName(name); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
			}
		case isDir(dir, e) && react.ValidateTaskName(e.Name()) == nil:
			name = e.Name()
		default:
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("task %s: more than one of %s, %s and the folder %s in %s: keep one", name, name+InputSuffix, name+ArchiveSuffix, name+"/", dir)
		}
		seen[name] = true
		tasks = append(tasks, name)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("no calibration inputs in %s: want <task>%s files (<task>%s for a model of several inputs) or <task>/ folders of images", dir, InputSuffix, ArchiveSuffix)
	}
	sort.Strings(tasks)
	return tasks, nil
}

// isDir reports whether the entry of dir is a directory, or a link to one.
func isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// openTaskInput opens a task's calibration inputs in dir: <task>.npy,
// <task>.npz, or else the folder <task>/ of images (with skip, those whose
// header does not decode are left out), decoded here or, with encoded,
// sent as they are.
func openTaskInput(dir, task string, skip, encoded bool) (sampleInput, error) {
	npz := filepath.Join(dir, task+ArchiveSuffix)
	if _, err := os.Stat(npz); err == nil {
		for _, other := range []string{filepath.Join(dir, task+InputSuffix), filepath.Join(dir, task)} {
			if _, err := os.Stat(other); err == nil {
				return nil, fmt.Errorf("both %s and %s: keep one", npz, other)
			}
		}
		if encoded {
			return nil, fmt.Errorf("%s: images.decode: triton sends image files to models that decode them, not tensors: give the task a folder %s of images, or use images.decode: go", npz, filepath.Join(dir, task)+string(filepath.Separator))
		}
		return openInput(npz)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	npy := filepath.Join(dir, task+InputSuffix)
	folder := filepath.Join(dir, task)
	st, err := os.Stat(folder)
	folderErr := err
	if err == nil && !st.IsDir() {
		folderErr = fmt.Errorf("%s is not a folder", folder)
	}
	if _, err := os.Stat(npy); err == nil {
		if folderErr == nil {
			return nil, fmt.Errorf("both %s and the folder %s: keep one", npy, folder+string(filepath.Separator))
		}
		if encoded {
			return nil, fmt.Errorf("%s: images.decode: triton sends image files to models that decode them, not tensors: give the task a folder %s of images, or use images.decode: go", npy, folder+string(filepath.Separator))
		}
		return openInput(npy)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if folderErr != nil {
		if errors.Is(folderErr, fs.ErrNotExist) {
			return nil, fmt.Errorf("no calibration inputs: neither %s, %s nor a folder %s of images", npy, npz, folder+string(filepath.Separator))
		}
		return nil, folderErr
	}
	if encoded {
		return openEncoded(folder, skip)
	}
	return openImages(folder, skip)
}
