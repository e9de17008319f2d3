package deploytest

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/mergectl/react-triton/sidecar/metrics"
)

// Paths the probes must use: Triton's health endpoints (its HTTP/REST
// protocol), and the sidecar's own liveness endpoint.
const (
	readyPath   = "/v2/health/ready"
	livePath    = "/v2/health/live"
	healthzPath = "/healthz"
)

// TestSidecarMode: Triton and the sidecar in one pod; Triton on localhost
// ports that the sidecar's configuration (from the ConfigMap) names; the
// sidecar on the ports the Service exposes; probes on real paths and
// ports; the sidecar drains before Triton stops; nothing runs as root.
func TestSidecarMode(t *testing.T) {
	r := render(t, "docker/k8s")
	d := only(t, "Deployment", r.deployments)
	pod := &d.Spec.Template.Spec
	triton, side := container(t, pod, "triton"), container(t, pod, "sidecar")
	if len(pod.Containers) != 2 {
		t.Errorf("the pod has %d containers, want triton and sidecar", len(pod.Containers))
	}
	checkNonRoot(t, "Deployment "+d.Name, pod)
	checkVolumes(t, "Deployment "+d.Name, pod, r)

	// The configuration: the file --config names, in a ConfigMap mounted as
	// a directory (a subPath mount would never see an update).
	cfgPath, ok := flagValue(side.Args, "config")
	if !ok {
		t.Fatalf("the sidecar has no --config: %v", side.Args)
	}
	mount, vol := mountOf(t, pod, side, cfgPath)
	if mount.SubPath != "" || mount.MountPath != filepath.Dir(cfgPath) || vol.ConfigMap == nil {
		t.Fatalf("--config %s: want the directory of a ConfigMap volume, mounted without subPath; got %+v", cfgPath, mount)
	}
	cm := r.configMaps[vol.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("no ConfigMap %s", vol.ConfigMap.Name)
	}
	if strings.ContainsAny(strings.TrimPrefix(cm.Name, "react-sidecar"), "-") {
		t.Errorf("ConfigMap %s: a hash suffix renames it at every change, so that editing it would not reload the sidecars", cm.Name)
	}
	text, ok := cm.Data[filepath.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm.Name, filepath.Base(cfgPath))
	}
	cfg := loadSidecarConfig(t, text)

	// Triton on localhost, on the ports the configuration names.
	for _, a := range []struct{ key, addr, flag string }{
		{"triton.grpc", cfg.Triton.GRPC, "grpc-port"},
		{"triton.http", cfg.Triton.HTTP, "http-port"},
	} {
		host, port := hostPort(t, a.addr)
		if host != "127.0.0.1" && host != "localhost" && host != "::1" {
			t.Errorf("%s = %s: Triton is in the same pod, on localhost", a.key, a.addr)
		}
		if got := intFlag(t, triton, a.flag); got != port {
			t.Errorf("Triton --%s=%d, the sidecar's %s = %s", a.flag, got, a.key, a.addr)
		}
		if !hasPort(triton, port) {
			t.Errorf("Triton does not declare port %d", port)
		}
	}
	_, tritonHTTP := hostPort(t, cfg.Triton.HTTP)
	_, listenHTTP := hostPort(t, cfg.Listen.HTTP)
	_, listenGRPC := hostPort(t, cfg.Listen.GRPC)
	_, listenMetrics := hostPort(t, cfg.Listen.Metrics)
	for _, p := range []int{listenHTTP, listenGRPC, listenMetrics} {
		if !hasPort(side, p) {
			t.Errorf("the sidecar listens on %d (listen section) but does not declare it", p)
		}
		if hasPort(triton, p) {
			t.Errorf("port %d is both the sidecar's and Triton's", p)
		}
	}

	// Probes on real endpoints.
	checkProbe(t, triton, "startup", triton.StartupProbe, readyPath, tritonHTTP)
	checkProbe(t, triton, "readiness", triton.ReadinessProbe, readyPath, tritonHTTP)
	checkProbe(t, triton, "liveness", triton.LivenessProbe, livePath, tritonHTTP)
	checkProbe(t, side, "readiness", side.ReadinessProbe, readyPath, listenHTTP)
	checkProbe(t, side, "liveness", side.LivenessProbe, healthzPath, listenMetrics)
	// The sidecar's liveness path is served by its metrics listener (the
	// real handler, not a stand-in).
	rec := httptest.NewRecorder()
	metrics.New().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, side.LivenessProbe.HTTPGet.Path, nil))
	if rec.Code != http.StatusOK {
		t.Errorf("the sidecar's metrics listener answers GET %s with %d", side.LivenessProbe.HTTPGet.Path, rec.Code)
	}

	// The Service: the sidecar's ports, under the numbers Triton had.
	svc := only(t, "Service", r.services)
	want := map[string]int{"http": listenHTTP, "grpc": listenGRPC}
	for _, p := range svc.Spec.Ports {
		target := portNumber(t, side, p.TargetPort)
		if want[p.Name] != target || int(p.Port) != target {
			t.Errorf("Service port %s: %d -> %d, want %d -> the sidecar's %d", p.Name, p.Port, target, want[p.Name], want[p.Name])
		}
		delete(want, p.Name)
	}
	if len(want) > 0 {
		t.Errorf("the Service lacks %v", want)
	}
	checkSelects(t, svc.Spec.Selector, d.Spec.Template.Labels)

	// Only the sidecar's ports and the metrics are open beyond the pod.
	open := policyPorts(t, only(t, "NetworkPolicy", r.policies).Spec.Ingress)
	for _, p := range []int{listenHTTP, listenGRPC, listenMetrics, intFlag(t, triton, "metrics-port")} {
		if !open[p] {
			t.Errorf("NetworkPolicy: port %d is closed", p)
		}
	}
	for _, p := range []int{tritonHTTP, intFlag(t, triton, "grpc-port")} {
		if open[p] {
			t.Errorf("NetworkPolicy: Triton's port %d is open: clients would bypass the sidecar", p)
		}
	}

	// Prometheus scrapes the sidecar's metrics.
	if got := d.Spec.Template.Annotations["prometheus.io/port"]; got != strconv.Itoa(listenMetrics) {
		t.Errorf("prometheus.io/port %q, the sidecar's listen.metrics is %d", got, listenMetrics)
	}

	// Graceful termination: the sidecar pauses (endpoints drop the pod),
	// then drains for listen.shutdown_timeout; Triton pauses at least as
	// long, then gets --exit-timeout-secs; the grace period covers both.
	drain := secondsOf(t, "listen.shutdown_timeout", cfg.Listen.ShutdownTimeout, int64(cfg.Listen.ShutdownTimeout))
	sidePause, tritonPause := preStopSleep(side), preStopSleep(triton)
	if sidePause == 0 {
		t.Error("the sidecar has no preStop pause: calls routed before the endpoints update would be refused")
	}
	if tritonPause < sidePause+drain {
		t.Errorf("Triton's preStop pause %ds < the sidecar's %ds + shutdown_timeout %ds: Triton would stop under the draining sidecar", tritonPause, sidePause, drain)
	}
	grace := int(*pod.TerminationGracePeriodSeconds)
	if exit := intFlag(t, triton, "exit-timeout-secs"); grace < tritonPause+exit {
		t.Errorf("terminationGracePeriodSeconds %d < Triton's pause %d + --exit-timeout-secs %d", grace, tritonPause, exit)
	}

	// A rolling update never lowers capacity.
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Error("the Deployment's rolling update may take a pod away before its successor is ready (maxUnavailable is not 0)")
	}
	if img := triton.Image; !strings.HasPrefix(img, "nvcr.io/nvidia/tritonserver:"+dotEnv(t)["TRITON_VERSION"]+"-py3") {
		t.Errorf("Triton image %s, want NGC's tritonserver %s", img, dotEnv(t)["TRITON_VERSION"])
	}
}

// TestBackendMode: the overlay runs Triton alone, from our image, on the
// ports clients call, with react-* headers forwarded to the react step.
func TestBackendMode(t *testing.T) {
	r := render(t, "docker/k8s/backend")
	d := only(t, "Deployment", r.deployments)
	pod := &d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("backend mode runs Triton alone; the pod has %d containers", len(pod.Containers))
	}
	triton := container(t, pod, "triton")
	checkNonRoot(t, "Deployment "+d.Name, pod)
	checkVolumes(t, "Deployment "+d.Name, pod, r)
	if len(r.configMaps) != 0 {
		t.Errorf("backend mode has no sidecar, but renders ConfigMaps %v", r.configMaps)
	}
	if want := "mergectl/react-tritonserver:" + dotEnv(t)["TRITON_VERSION"] + "-"; !strings.HasPrefix(triton.Image, want) {
		t.Errorf("Triton image %s, want %s… (make image-triton)", triton.Image, want)
	}
	for _, f := range []string{"grpc-header-forward-pattern", "http-header-forward-pattern"} {
		if v, _ := flagValue(triton.Args, f); v != "react-.*" {
			t.Errorf("Triton --%s=%q, want react-.* (docs/backend.md)", f, v)
		}
	}
	httpPort, grpcPort := intFlag(t, triton, "http-port"), intFlag(t, triton, "grpc-port")
	checkProbe(t, triton, "startup", triton.StartupProbe, readyPath, httpPort)
	checkProbe(t, triton, "readiness", triton.ReadinessProbe, readyPath, httpPort)
	checkProbe(t, triton, "liveness", triton.LivenessProbe, livePath, httpPort)
	svc := only(t, "Service", r.services)
	want := map[string]int{"http": httpPort, "grpc": grpcPort}
	for _, p := range svc.Spec.Ports {
		if target := portNumber(t, triton, p.TargetPort); target != want[p.Name] || int(p.Port) != target {
			t.Errorf("Service port %s: %d -> %d, want Triton's %d", p.Name, p.Port, target, want[p.Name])
		}
	}
	open := policyPorts(t, only(t, "NetworkPolicy", r.policies).Spec.Ingress)
	for _, p := range []int{httpPort, grpcPort, intFlag(t, triton, "metrics-port")} {
		if !open[p] {
			t.Errorf("NetworkPolicy: port %d is closed", p)
		}
	}
	if got := d.Spec.Template.Annotations["prometheus.io/port"]; got != strconv.Itoa(intFlag(t, triton, "metrics-port")) {
		t.Errorf("prometheus.io/port %q, Triton's --metrics-port is %d", got, intFlag(t, triton, "metrics-port"))
	}
	// The react models name their components file under /models/react.
	if m, v := mountOf(t, pod, triton, "/models/react/components.safetensors"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "react-components" || !m.ReadOnly {
		t.Errorf("/models/react: want the react-components claim, read-only; got %+v", v)
	}
	grace := int(*pod.TerminationGracePeriodSeconds)
	if pause, exit := preStopSleep(triton), intFlag(t, triton, "exit-timeout-secs"); pause == 0 || grace < pause+exit {
		t.Errorf("terminationGracePeriodSeconds %d, preStop pause %d, --exit-timeout-secs %d", grace, pause, exit)
	}
}

// policyPorts returns the TCP ports a NetworkPolicy's ingress rules open
// to every source.
func policyPorts(t *testing.T, rules []networkingv1.NetworkPolicyIngressRule) map[int]bool {
	t.Helper()
	open := map[int]bool{}
	for _, rule := range rules {
		if len(rule.From) != 0 {
			continue
		}
		for _, p := range rule.Ports {
			if p.Port == nil || p.EndPort != nil {
				t.Errorf("NetworkPolicy: a port rule without a single port: %+v", p)
				continue
			}
			open[p.Port.IntValue()] = true
		}
	}
	return open
}

// checkSelects: the selector matches the labels.
func checkSelects(t *testing.T, selector, labels map[string]string) {
	t.Helper()
	if len(selector) == 0 {
		t.Error("an empty selector")
	}
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod's labels %v", k, v, labels)
		}
	}
}

// containsArg reports whether args holds a.
func containsArg(args []string, a string) bool { return slices.Contains(args, a) }
