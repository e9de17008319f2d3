// Command sidecar serves Triton's gRPC and HTTP protocol in front of a real
// Triton. See "sidecar --help", and package sidecar for the implementation.
package main

import (
	"os"

	// The cuda backend (linalg.backend: cuda), in a build with the cuda
	// tag.
	_ "github.com/mergectl/react-triton/react/cudadevice"
	"github.com/mergectl/react-triton/sidecar"
)

func main() {
	os.Exit(sidecar.Main(os.Args[1:], os.Stdout, os.Stderr))
}
