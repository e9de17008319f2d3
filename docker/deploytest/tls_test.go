package deploytest

import (
	"strings"
	"testing"

	"github.com/mergectl/react-triton/sidecar/config"
)

// TestTLSOverlay: the tls overlay turns TLS on with the sidecar's own
// environment variables, its files on a Secret volume mounted as a
// directory (a subPath mount would never see a renewal), the readiness
// probe on the metrics listener's /readyz (the kubelet has no client
// certificate), and the Service saying its ports speak TLS; the rest is
// the base's.
func TestTLSOverlay(t *testing.T) {
	r := render(t, "docker/k8s/tls")
	d := only(t, "Deployment", r.deployments)
	pod := &d.Spec.Template.Spec
	side := container(t, pod, "sidecar")
	checkNonRoot(t, "Deployment "+d.Name, pod)
	env := map[string]string{}
	for _, e := range side.Env {
		env[e.Name] = e.Value
	}
	if env[config.EnvVar("server.tls.enabled")] != "true" {
		t.Errorf("%s = %q, want true", config.EnvVar("server.tls.enabled"), env[config.EnvVar("server.tls.enabled")])
	}
	if _, ok := env["GOMEMLIMIT"]; !ok {
		t.Error("the overlay lost the base's GOMEMLIMIT")
	}
	for _, key := range []string{"server.tls.cert_file", "server.tls.key_file"} {
		path := env[config.EnvVar(key)]
		if path == "" {
			t.Errorf("%s (%s) is not set", config.EnvVar(key), key)
			continue
		}
		mount, vol := mountOf(t, pod, side, path)
		if vol.Secret == nil || vol.Secret.SecretName == "" || mount.SubPath != "" || !mount.ReadOnly {
			t.Errorf("%s = %s: want a file of a Secret volume, mounted read-only as a directory; got %+v %+v", key, path, mount, vol)
		}
		if !strings.HasPrefix(path, mount.MountPath+"/") {
			t.Errorf("%s = %s is not under %s", key, path, mount.MountPath)
		}
	}
	// The configuration the ConfigMap gives, for the metrics port.
	cmName := ""
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cfg := loadSidecarConfig(t, r.configMaps[cmName].Data["sidecar.yaml"])
	if cfg.Server.TLS.Metrics {
		t.Error("the metrics listener is TLS: the kubelet's probes there are plain HTTP")
	}
	_, metrics := hostPort(t, cfg.Listen.Metrics)
	checkProbe(t, side, "readiness", side.ReadinessProbe, "/readyz", metrics)
	checkProbe(t, side, "liveness", side.LivenessProbe, healthzPath, metrics)
	svc := only(t, "Service", r.services)
	for _, p := range svc.Spec.Ports {
		if p.AppProtocol == nil || (*p.AppProtocol != "https" && *p.AppProtocol != "grpc") {
			t.Errorf("Service port %s: appProtocol %v, want https or grpc", p.Name, p.AppProtocol)
		}
	}
}
