package deploytest

import (
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mergectl/react-triton/sidecar/config/memory"
)

// The components file the shipped manifests are sized for.
var sizedFor = memory.Shape{D: 1280, Tasks: 8}

// headroom is what the sidecar's memory limit keeps above GOMEMLIMIT, for
// the memory the Go runtime does not count.
const headroom = 128 << 20

// TestSidecarMemory: the sidecar's GOMEMLIMIT is the memory budget of its
// ConfigMap's configuration, as the container runs it (its REACT_*
// variables applied: the live overlay turns sampling on), for a components
// file of D = 1280 and 8 tasks (memory.BudgetOf, rounded up to a MiB),
// and its memory limit and request are GOMEMLIMIT + 128 MiB
// (docs/deploy.md, "Memory").
func TestSidecarMemory(t *testing.T) {
	for _, dir := range []string{"docker/k8s", "docker/k8s/live"} {
		t.Run(dir, func(t *testing.T) { checkSidecarMemory(t, dir) })
	}
}

func checkSidecarMemory(t *testing.T, dir string) {
	r := render(t, dir)
	d := only(t, "Deployment", r.deployments)
	pod := &d.Spec.Template.Spec
	side := container(t, pod, "sidecar")
	cfgPath, _ := flagValue(side.Args, "config")
	_, vol := mountOf(t, pod, side, cfgPath)
	cfg := loadPodSidecarConfig(t, r.configMaps[vol.ConfigMap.Name].Data[filepath.Base(cfgPath)], side)
	shapes := map[string]memory.Shape{}
	for _, c := range cfg.Components {
		shapes[c.Name] = sizedFor
	}
	if cfg.Admission.MaxConcurrentSolves == 0 {
		t.Error("admission.max_concurrent_solves is left to the node's cores: the budget would depend on the node")
	}
	budget := memory.BudgetOf(cfg, shapes, 1)
	mib := (budget.Total() + 1<<20 - 1) >> 20
	var gomemlimit string
	for _, e := range side.Env {
		if e.Name == "GOMEMLIMIT" {
			gomemlimit = e.Value
		}
	}
	if want := fmt.Sprintf("%dMiB", mib); gomemlimit != want {
		t.Errorf("GOMEMLIMIT %q, want %s: the budget (%s)", gomemlimit, want, budget)
	}
	want := resource.NewQuantity(mib<<20+headroom, resource.BinarySI)
	lim, req := side.Resources.Limits.Memory(), side.Resources.Requests.Memory()
	if lim.Cmp(*want) != 0 || req.Cmp(*want) != 0 {
		t.Errorf("memory limit %v and request %v, want %v (GOMEMLIMIT + 128Mi)", lim, req, want)
	}
}
