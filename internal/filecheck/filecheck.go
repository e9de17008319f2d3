// Package filecheck says whether a configured file can be read, in the
// words of a configuration problem.
package filecheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Regular returns what keeps path from being read as a regular file, or
// "".
func Regular(path string) string {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Sprintf("cannot read %s: %v", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("cannot read %s: %v", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", path)
	}
	return ""
}
