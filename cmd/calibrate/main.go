// Command calibrate fits, inspects, edits and solves ReACT components files.
// See "calibrate --help", and package calibrate for the implementation.
package main

import (
	"os"

	"github.com/mergectl/react-triton/calibrate"
	// The cuda backend (--linalg cuda), in a build with the cuda tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
)

func main() {
	os.Exit(calibrate.Main(os.Args[1:], os.Stdout, os.Stderr))
}
