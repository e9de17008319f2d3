package deploytest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mergectl/react-triton/problem"
	"github.com/mergectl/react-triton/sidecar/config"
)

// only returns the single value of m, failing unless there is exactly one.
func only[T any](t *testing.T, what string, m map[string]*T) *T {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("want exactly one %s, got %d", what, len(m))
	}
	for _, v := range m {
		return v
	}
	return nil
}

// container returns the pod's container called name.
func container(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	t.Fatalf("no container %q in the pod", name)
	return nil
}

// flagValue returns the value of --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// intFlag returns an integer flag of args.
func intFlag(t *testing.T, c *corev1.Container, name string) int {
	t.Helper()
	v, ok := flagValue(c.Args, name)
	if !ok {
		t.Fatalf("container %s: no --%s in %v", c.Name, name, c.Args)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("container %s: --%s=%q: %v", c.Name, name, v, err)
	}
	return n
}

// portNumber resolves a probe's or a Service's port (a number, or the name
// of one of c's ports).
func portNumber(t *testing.T, c *corev1.Container, p intstr.IntOrString) int {
	t.Helper()
	if p.Type == intstr.Int {
		return int(p.IntVal)
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

// hasPort reports whether c declares containerPort n.
func hasPort(c *corev1.Container, n int) bool {
	for _, cp := range c.Ports {
		if int(cp.ContainerPort) == n {
			return true
		}
	}
	return false
}

// hostPort splits a host:port address; an empty host is every interface.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return host, n
}

// checkProbe checks that a probe is an HTTP GET of path on port.
func checkProbe(t *testing.T, c *corev1.Container, kind string, p *corev1.Probe, path string, port int) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("container %s: no HTTP %s probe", c.Name, kind)
		return
	}
	if p.HTTPGet.Path != path || portNumber(t, c, p.HTTPGet.Port) != port {
		t.Errorf("container %s: %s probe GET %s on port %s, want %s on %d", c.Name, kind, p.HTTPGet.Path, p.HTTPGet.Port.String(), path, port)
	}
}

// preStopSleep is a container's preStop pause in seconds (0 without one).
func preStopSleep(c *corev1.Container) int {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	return int(c.Lifecycle.PreStop.Sleep.Seconds)
}

// checkNonRoot: no container of the pod runs as root or can become root.
// The user must be explicit (a number, from the container or the pod):
// NGC's Triton image starts as root by default.
func checkNonRoot(t *testing.T, id string, pod *corev1.PodSpec) {
	t.Helper()
	all := append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
	for _, c := range all {
		var nonRoot *bool
		var user *int64
		if s := pod.SecurityContext; s != nil {
			nonRoot, user = s.RunAsNonRoot, s.RunAsUser
		}
		s := c.SecurityContext
		if s == nil {
			t.Errorf("%s: container %s has no securityContext", id, c.Name)
			continue
		}
		if s.RunAsNonRoot != nil {
			nonRoot = s.RunAsNonRoot
		}
		if s.RunAsUser != nil {
			user = s.RunAsUser
		}
		switch {
		case nonRoot == nil || !*nonRoot:
			t.Errorf("%s: container %s: runAsNonRoot is not true", id, c.Name)
		case user == nil || *user == 0:
			t.Errorf("%s: container %s: runAsUser is not a non-zero uid", id, c.Name)
		}
		if s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation {
			t.Errorf("%s: container %s: allowPrivilegeEscalation is not false", id, c.Name)
		}
		if s.Capabilities == nil || len(s.Capabilities.Drop) != 1 || s.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: container %s: capabilities do not drop ALL", id, c.Name)
		}
	}
}

// checkVolumes: every configMap and claim a pod mounts is defined, in r or
// in the base (claims shared with the server pods).
func checkVolumes(t *testing.T, id string, pod *corev1.PodSpec, rs ...*rendered) {
	t.Helper()
	has := func(pick func(*rendered) bool) bool {
		for _, r := range rs {
			if pick(r) {
				return true
			}
		}
		return false
	}
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			if !has(func(r *rendered) bool { return r.configMaps[v.ConfigMap.Name] != nil }) {
				t.Errorf("%s: volume %s: no ConfigMap %s", id, v.Name, v.ConfigMap.Name)
			}
		case v.PersistentVolumeClaim != nil:
			if !has(func(r *rendered) bool { return r.claims[v.PersistentVolumeClaim.ClaimName] != nil }) {
				t.Errorf("%s: volume %s: no PersistentVolumeClaim %s", id, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if volume(pod, m.Name) == nil {
				t.Errorf("%s: container %s mounts %s, which the pod does not define", id, c.Name, m.Name)
			}
		}
	}
}

// volume returns the pod's volume called name, or nil.
func volume(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// mountOf returns the mount of c whose directory holds path, and the
// volume behind it.
func mountOf(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	t.Helper()
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		t.Fatalf("container %s: no volume mounted above %s", c.Name, path)
	}
	return best, volume(pod, best.Name)
}

// loadSidecarConfig loads a sidecar configuration with the sidecar's own
// loader (strict: unknown keys, bad values), from a temporary copy. The
// components files it names are elsewhere (a volume): "does not exist"
// problems on components[i].path are the only ones allowed. REACT_*
// variables of the test's environment are cleared.
func loadSidecarConfig(t *testing.T, yamlText string) *config.Config {
	t.Helper()
	clearReactEnv(t)
	return loadSidecarYAML(t, yamlText)
}

// loadPodSidecarConfig loads the sidecar configuration as container c
// runs it: yamlText with c's REACT_* variables set (a value from the
// pod's fields, such as its name, as pod-0).
func loadPodSidecarConfig(t *testing.T, yamlText string, c *corev1.Container) *config.Config {
	t.Helper()
	clearReactEnv(t)
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "REACT_") {
			continue
		}
		v := e.Value
		if e.ValueFrom != nil {
			v = "pod-0"
		}
		t.Setenv(e.Name, v)
	}
	return loadSidecarYAML(t, yamlText)
}

// loadSidecarYAML is loadSidecarConfig in the environment as it is.
func loadSidecarYAML(t *testing.T, yamlText string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err == nil {
		return cfg
	}
	var cerr problem.List
	if !errors.As(err, &cerr) {
		t.Fatalf("the sidecar configuration does not load: %v", err)
	}
	pathKey := regexp.MustCompile(`^components\[\d+\]\.path$`)
	for _, fe := range cerr {
		if !pathKey.MatchString(fe.Path) {
			t.Errorf("the sidecar configuration: %v", fe)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// Only the files are missing: load it again with them in place, to get
	// the configuration itself.
	return loadWithFiles(t, yamlText, cerr)
}

// loadWithFiles loads yamlText again with every components path moved
// under a temporary directory, where an empty file stands for it, and
// returns the configuration with the original paths.
func loadWithFiles(t *testing.T, yamlText string, cerr problem.List) *config.Config {
	t.Helper()
	dir := t.TempDir()
	moved := yamlText
	originals := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*path:\s*(/\S+)`).FindAllStringSubmatch(yamlText, -1) {
		stand := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(m[1], "/"), "/", "_"))
		if err := os.WriteFile(stand, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		moved = strings.ReplaceAll(moved, m[1], stand)
		originals[stand] = m[1]
	}
	path := filepath.Join(dir, "sidecar.yaml")
	if err := os.WriteFile(path, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("the sidecar configuration, its components paths aside (%v): %v", cerr, err)
	}
	for i := range cfg.Components {
		cfg.Components[i].Path = originals[cfg.Components[i].Path]
	}
	return cfg
}

// secondsOf is a Go duration in whole seconds, rounded up.
func secondsOf(t *testing.T, what string, d fmt.Stringer, ns int64) int {
	t.Helper()
	if ns <= 0 {
		t.Fatalf("%s: %v is not positive", what, d)
	}
	return int((ns + 999_999_999) / 1_000_000_000)
}

// clearReactEnv unsets the REACT_* variables (which override the
// sidecar's configuration) for the rest of the test.
func clearReactEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "REACT_") {
			t.Setenv(k, v)
			os.Unsetenv(k)
		}
	}
}
