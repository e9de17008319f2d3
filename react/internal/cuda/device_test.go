//go:build cuda

package cuda

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// underEmulator reports whether the tests run under the CUDA emulator.
func underEmulator() bool { return os.Getenv("REACT_CUDA_EXPECT") == "emulator" }

// runChild runs test t again in a child process, the test binary itself,
// with env added to its environment (the emulator reads its settings once
// per process), and fails t unless the child's t passed.
func runChild(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("child with %v: %v\n%s", env, err, out)
	}
	t.Logf("child with %v passed", env)
}

// TestDoUnpinsHostMemory: the host memory of a copy is pinned only until
// Do returns: afterwards the collector may free it.
func TestDoUnpinsHostMemory(t *testing.T) {
	d := openOrSkip(t)
	var p Ptr
	if err := d.Do(func() error {
		var err error
		p, err = d.Alloc(64)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer d.Free(p)
	collected := make(chan struct{})
	func() {
		buf := new([16]float32)
		runtime.AddCleanup(buf, func(c chan struct{}) { close(c) }, collected)
		if err := d.Do(func() error {
			if err := d.Upload32(p, buf[:]); err != nil {
				return err
			}
			return d.Download32(buf[:], p)
		}); err != nil {
			t.Fatal(err)
		}
	}()
	for range 100 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the host memory of a copy was never collected: still pinned after Do returned")
}

// TestCheckRangeNegativeLength: a negative length is refused, not wrapped
// into a range that ends before it starts.
func TestCheckRangeNegativeLength(t *testing.T) {
	d := openOrSkip(t)
	const n = 4096
	var p Ptr
	if err := d.Do(func() error {
		var err error
		p, err = d.Alloc(n)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer d.Free(p)
	for _, tc := range []struct {
		p Ptr
		n int
	}{{p, -1}, {p + 100, -50}, {p + n - 1, -n}} {
		if err := d.Do(func() error { return d.CheckRange(tc.p, tc.n) }); err == nil {
			t.Errorf("CheckRange(%#x, %d) passed", uintptr(tc.p), tc.n)
		}
	}
}

// TestOpenPastTheLastDevice: opening the ordinal after the last device
// fails with ErrNoDevice, as any larger one does.
func TestOpenPastTheLastDevice(t *testing.T) {
	openOrSkip(t)
	for k := 1; k <= 16; k++ {
		d, err := Open(k)
		if err == nil {
			d.Close()
			continue
		}
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open(%d), past the last device: %v, want ErrNoDevice", k, err)
		}
		return
	}
	t.Skip("16 devices or more")
}

// TestCheckRangeOtherDevice: memory of another device is refused, though
// it is device memory inside one allocation. Under the emulator it runs in
// a child with two devices (REACT_EMU_DEVICES=2); on a machine with one
// GPU it skips.
func TestCheckRangeOtherDevice(t *testing.T) {
	if underEmulator() && os.Getenv("REACT_EMU_DEVICES") == "" {
		runChild(t, "REACT_EMU_DEVICES=2")
		return
	}
	d := openOrSkip(t)
	other, err := Open(1)
	if err != nil {
		if underEmulator() {
			t.Fatalf("Open(1) with REACT_EMU_DEVICES=%s: %v", os.Getenv("REACT_EMU_DEVICES"), err)
		}
		t.Skipf("no second device: %v", err)
	}
	defer other.Close()
	const n = 4096
	var p Ptr
	if err := other.Do(func() error {
		var err error
		p, err = other.Alloc(n)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer other.Free(p)
	if err := other.Do(func() error { return other.CheckRange(p, n) }); err != nil {
		t.Errorf("device 1's own memory: %v", err)
	}
	if err := d.Do(func() error { return d.CheckRange(p, n) }); err == nil || !strings.Contains(err.Error(), "on device 1") {
		t.Errorf("device 0's CheckRange of device 1's memory = %v, want it refused as device 1's", err)
	}
}

// TestOpenChoosesLibrariesByDriverVersion: Open loads the cuBLAS and
// cuSOLVER (and RuntimeAlloc the runtime) of the driver's CUDA version: in
// a directory where CUDA 12's sonames are the emulator and CUDA 13's are
// another library (libc, which lacks every function), a CUDA 12 driver
// opens the emulator's, and a CUDA 13 driver fails on libc's; with CUDA
// 13's sonames the emulator's, the reverse. Emulator only (children with
// their own LD_LIBRARY_PATH and REACT_EMU_DRIVER_VERSION).
func TestOpenChoosesLibrariesByDriverVersion(t *testing.T) {
	if !underEmulator() {
		t.Skip("under the emulator only")
	}
	if want := os.Getenv("REACT_TEST_OPEN_WANT"); want != "" {
		openAndAllocate(t, want)
		return
	}
	openOrSkip(t) // the emulator loaded
	emu, libc := findLibrary(t, "libcudaemu.so"), findLibrary(t, "libc.so.6")
	for _, tc := range []struct {
		name    string
		version string
		cuda13  bool // the emulator under CUDA 13's sonames, libc under CUDA 12's
		want    string
	}{
		{"cuda12 driver, cuda12 libraries", "12080", false, "ok"},
		{"cuda12 driver, cuda13 libraries", "12080", true, "libcublas.so.12"},
		{"cuda13 driver, cuda13 libraries", "13000", true, "ok"},
		{"cuda13 driver, cuda12 libraries", "13000", false, "lacks cublasCreate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			link := func(target string, names ...string) {
				for _, n := range names {
					if err := os.Symlink(target, filepath.Join(dir, n)); err != nil {
						t.Fatal(err)
					}
				}
			}
			link(emu, "libcuda.so.1")
			new, old := emu, libc
			if !tc.cuda13 {
				new, old = libc, emu
			}
			link(new, "libcublas.so.13", "libcusolver.so.12", "libcudart.so.13")
			if tc.want == "ok" || !tc.cuda13 {
				link(old, "libcublas.so.12", "libcusolver.so.11", "libcudart.so.12")
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenChoosesLibrariesByDriverVersion$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir, "REACT_EMU_DRIVER_VERSION="+tc.version, "REACT_TEST_OPEN_WANT="+tc.want)
			if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("--- PASS: TestOpenChoosesLibrariesByDriverVersion")) {
				t.Fatalf("child: %v\n%s", err, out)
			}
		})
	}
}

// openAndAllocate opens the device and allocates through the runtime, in a
// child of TestOpenChoosesLibrariesByDriverVersion: want is "ok", or what
// Open's error must say.
func openAndAllocate(t *testing.T, want string) {
	d, err := Open(0)
	if want != "ok" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open = %v, want an error saying %q", err, want)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := RuntimeAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := RuntimeFree(p); err != nil {
		t.Fatal(err)
	}
}

// findLibrary returns the path of a shared library this process has
// mapped (from /proc/self/maps), or fails t.
func findLibrary(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if p := fields[len(fields)-1]; strings.HasPrefix(p, "/") && filepath.Base(p) == name {
			return p
		}
	}
	t.Fatalf("%s is not mapped in this process", name)
	return ""
}
