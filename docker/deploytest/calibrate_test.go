package deploytest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/mergectl/react-triton/config"
	"github.com/mergectl/react-triton/problem"
)

// indexVar is how the fit Job's arguments name the pod's index.
const indexVar = "$(JOB_COMPLETION_INDEX)"

// TestCalibrationJobs: the Indexed Job runs `calibrate fit --shard i/n
// --resume` with n its completion count, against the Service, each shard
// into its own file, with arguments calibrate's own loader accepts; the
// merge Job adds exactly those n files into the volume the sidecars read
// their components files from.
func TestCalibrationJobs(t *testing.T) {
	base, fitR, mergeR := render(t, "docker/k8s"), render(t, "docker/k8s/calibrate"), render(t, "docker/k8s/calibrate-merge")
	fit := fitR.jobs["react-calibrate-fit"]
	merge := mergeR.jobs["react-calibrate-merge"]
	if fit == nil || merge == nil {
		t.Fatal("want Jobs react-calibrate-fit and react-calibrate-merge")
	}
	for _, j := range []struct {
		id  string
		pod *corev1.PodSpec
	}{{"Job " + fit.Name, &fit.Spec.Template.Spec}, {"Job " + merge.Name, &merge.Spec.Template.Spec}} {
		checkNonRoot(t, j.id, j.pod)
		checkVolumes(t, j.id, j.pod, fitR, mergeR, base)
	}

	if fit.Spec.CompletionMode == nil || *fit.Spec.CompletionMode != "Indexed" || fit.Spec.Completions == nil {
		t.Fatal("react-calibrate-fit is not an Indexed Job with completions")
	}
	n := int(*fit.Spec.Completions)
	fc := container(t, &fit.Spec.Template.Spec, "calibrate")
	if len(fc.Command) != 1 || filepath.Base(fc.Command[0]) != "calibrate" || len(fc.Args) == 0 || fc.Args[0] != "fit" {
		t.Fatalf("the fit pod runs %v %v, want calibrate fit", fc.Command, fc.Args)
	}
	if shard, _ := flagValue(fc.Args, "shard"); shard != fmt.Sprintf("%s/%d", indexVar, n) {
		t.Errorf("--shard=%q, want %s/%d (completions)", shard, indexVar, n)
	}
	if !containsArg(fc.Args, "--resume") {
		t.Error("the fit pods do not --resume: a restarted pod would refuse its own checkpoint")
	}
	if !hasIndexEnv(fc) {
		t.Error("JOB_COMPLETION_INDEX is not defined from the job-completion-index annotation")
	}
	// --triton names the Service's gRPC port.
	svc := base.services["react-triton"]
	triton, _ := flagValue(fc.Args, "triton")
	host, port := hostPort(t, triton)
	if svc == nil || strings.Split(host, ".")[0] != svc.Name || !servicePort(svc.Spec.Ports, "grpc", port) {
		t.Errorf("--triton=%s: want the Service react-triton's grpc port", triton)
	}
	out, _ := flagValue(fc.Args, "out")
	if !strings.Contains(out, indexVar) {
		t.Fatalf("--out=%s: each shard needs a file of its own", out)
	}

	// Every shard's arguments, with the configuration the pod mounts, load
	// with calibrate's own loader.
	cfgPath, _ := flagValue(fc.Args, "config")
	_, cfgVol := mountOf(t, &fit.Spec.Template.Spec, fc, cfgPath)
	cm := fitR.configMaps[cfgVol.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("no ConfigMap %s", cfgVol.ConfigMap.Name)
	}
	for i := range n {
		args := make([]string, len(fc.Args)-1)
		for k, a := range fc.Args[1:] {
			args[k] = strings.ReplaceAll(a, indexVar, strconv.Itoa(i))
		}
		c := loadCalibrate(t, cm.Data[filepath.Base(cfgPath)], cfgPath, args)
		if c.Shard != fmt.Sprintf("%d/%d", i, n) || c.Triton.GRPC != triton {
			t.Errorf("shard %d loads as shard %q against %q", i, c.Shard, c.Triton.GRPC)
		}
	}

	// The merge adds parts 0..n-1, read from the same volume directory.
	mc := container(t, &merge.Spec.Template.Spec, "merge")
	if len(mc.Args) == 0 || mc.Args[0] != "merge" {
		t.Fatalf("the merge pod runs %v", mc.Args)
	}
	var parts []string
	for _, a := range mc.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			parts = append(parts, a)
		}
	}
	if len(parts) != n {
		t.Fatalf("calibrate merge adds %d parts, the fit Job makes %d", len(parts), n)
	}
	fitMount, fitVol := mountOf(t, &fit.Spec.Template.Spec, fc, out)
	for i, p := range parts {
		if want := strings.ReplaceAll(out, indexVar, strconv.Itoa(i)); p != want {
			t.Errorf("merge part %d is %s, the fit writes %s", i, p, want)
		}
		m, v := mountOf(t, &merge.Spec.Template.Spec, mc, p)
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != fitVol.PersistentVolumeClaim.ClaimName ||
			m.SubPath != fitMount.SubPath || m.MountPath != fitMount.MountPath {
			t.Errorf("merge part %s is not on the fit's volume directory", p)
		}
	}
	// The merged file lands where the sidecars' components files are.
	mergeOut, _ := flagValue(mc.Args, "out")
	outMount, outVol := mountOf(t, &merge.Spec.Template.Spec, mc, mergeOut)
	d := base.deployments["react-triton"]
	side := container(t, &d.Spec.Template.Spec, "sidecar")
	var seen bool
	for _, m := range side.VolumeMounts {
		v := volume(&d.Spec.Template.Spec, m.Name)
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == outVol.PersistentVolumeClaim.ClaimName {
			seen = m.MountPath == outMount.MountPath && m.SubPath == outMount.SubPath
		}
	}
	if !seen {
		t.Errorf("calibrate merge writes %s (claim %s), which the sidecar does not mount at the same path", mergeOut, outVol.PersistentVolumeClaim.ClaimName)
	}
}

// hasIndexEnv reports whether c defines JOB_COMPLETION_INDEX from the
// pod's completion-index annotation.
func hasIndexEnv(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			return true
		}
	}
	return false
}

// servicePort reports whether the Service has a port called name numbered port.
func servicePort(ports []corev1.ServicePort, name string, port int) bool {
	for _, p := range ports {
		if p.Name == name && int(p.Port) == port {
			return true
		}
	}
	return false
}

// loadCalibrate loads calibrate fit's configuration as the pod would: the
// file (written to a temporary directory in place of mountedPath) and the
// flags args, with config.LoadCalibrate. Only problems with out (whose
// directory is a volume here) are allowed.
func loadCalibrate(t *testing.T, yamlText, mountedPath string, args []string) *config.Calibrate {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.Base(mountedPath))
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("fit", pflag.ContinueOnError)
	config.BindCalibrateFlags(fs)
	fs.Bool(config.FlagResume, false, "")
	for i, a := range args {
		args[i] = strings.Replace(a, "--config="+mountedPath, "--config="+path, 1)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("calibrate fit %v: %v", args, err)
	}
	c, err := config.LoadCalibrate("", fs)
	var cerr problem.List
	switch {
	case err == nil:
		return c
	case !errors.As(err, &cerr):
		t.Fatalf("calibrate fit %v: %v", args, err)
	}
	for _, fe := range cerr {
		if fe.Path != "out" {
			t.Errorf("calibrate fit %v: %v", args, fe)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// Only out's directory is missing: load again with one that exists.
	out, _ := flagValue(args, "out")
	dir := t.TempDir()
	if err := fs.Set("out", filepath.Join(dir, filepath.Base(out))); err != nil {
		t.Fatal(err)
	}
	c, err = config.LoadCalibrate("", fs)
	if err != nil {
		t.Fatalf("calibrate fit %v, out aside: %v", args, err)
	}
	return c
}
