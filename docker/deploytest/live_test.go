package deploytest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mergectl/react-triton/calibrate"
	"github.com/mergectl/react-triton/livestats"
	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// TestLiveOverlay: docker/k8s/live turns sampling on in every sidecar
// (the base leaves it off), names each replica after its pod and mounts
// the react-live volume, writable, at sampling.checkpoint.dir; the refresh
// CronJob merges that directory with calibrate merge --live-dir, --base
// the file the plan step links, into the volume the sidecars read their
// components files from, at the same path, and may touch no other object
// than the sidecars' ConfigMap. The merge's own arguments then run, in
// process, on files a sampler wrote.
func TestLiveOverlay(t *testing.T) {
	base, r := render(t, "docker/k8s"), render(t, "docker/k8s/live")
	d := only(t, "Deployment", r.deployments)
	pod := &d.Spec.Template.Spec
	side := container(t, pod, "sidecar")
	cfgPath, _ := flagValue(side.Args, "config")
	_, cfgVol := mountOf(t, pod, side, cfgPath)
	cfgText := r.configMaps[cfgVol.ConfigMap.Name].Data[filepath.Base(cfgPath)]
	if off := loadSidecarConfig(t, base.configMaps[cfgVol.ConfigMap.Name].Data[filepath.Base(cfgPath)]); off.Sampling.Enabled {
		t.Error("the base turns sampling on: it must be off unless the live overlay is applied")
	}
	cfg := loadPodSidecarConfig(t, cfgText, side)
	s := cfg.SamplingSettings()
	if !s.Enabled || s.Replica != "pod-0" || len(s.Models) == 0 || len(s.Tasks) == 0 {
		t.Fatalf("the sidecar's sampling as the pod runs it: %+v", s)
	}
	var replica bool
	for _, e := range side.Env {
		if e.Name == "REACT_SAMPLING_REPLICA" {
			replica = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
		}
	}
	if !replica {
		t.Error("REACT_SAMPLING_REPLICA is not the pod's name: replicas would write the same files")
	}
	liveDir := s.Dir
	liveMount, liveVol := mountOf(t, pod, side, liveDir+"/x")
	if liveMount.MountPath != liveDir || liveMount.ReadOnly || liveVol.PersistentVolumeClaim == nil {
		t.Fatalf("sampling.checkpoint.dir %s is not a writable volume mount of the sidecar", liveDir)
	}
	claim := r.claims[liveVol.PersistentVolumeClaim.ClaimName]
	if claim == nil || !slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("claim %s is not ReadWriteMany: every replica and the CronJob share it", liveVol.PersistentVolumeClaim.ClaimName)
	}

	cj := r.cronJobs["react-refresh"]
	if cj == nil {
		t.Fatal("no CronJob react-refresh")
	}
	if cj.Spec.ConcurrencyPolicy != "Forbid" {
		t.Error("two refreshes may run at once")
	}
	job := &cj.Spec.JobTemplate.Spec.Template.Spec
	checkNonRoot(t, "CronJob react-refresh", job)
	checkVolumes(t, "CronJob react-refresh", job, r)
	checkRefreshRBAC(t, r, job.ServiceAccountName, cfgVol.ConfigMap.Name)

	init := func(name string) *corev1.Container {
		for i := range job.InitContainers {
			if job.InitContainers[i].Name == name {
				return &job.InitContainers[i]
			}
		}
		t.Fatalf("CronJob react-refresh: no init container %s", name)
		return nil
	}
	plan, merge, publish := init("plan"), init("merge"), container(t, job, "publish")
	env := func(c *corev1.Container, name string) string {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	if len(merge.Args) == 0 || merge.Args[0] != "merge" || filepath.Base(merge.Command[0]) != "calibrate" {
		t.Fatalf("the merge step runs %v %v", merge.Command, merge.Args)
	}
	dir, _ := flagValue(merge.Args, "live-dir")
	if dir != liveDir {
		t.Errorf("--live-dir=%s, but the sidecars write to %s", dir, liveDir)
	}
	if _, v := mountOf(t, job, merge, dir+"/x"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != liveVol.PersistentVolumeClaim.ClaimName {
		t.Errorf("--live-dir %s is not the sidecars' live volume", dir)
	}
	out, _ := flagValue(merge.Args, "out")
	outMount, outVol := mountOf(t, job, merge, out)
	sideMount, sideVol := mountOf(t, pod, side, cfg.Components[0].Path)
	if outVol.PersistentVolumeClaim == nil || outVol.PersistentVolumeClaim.ClaimName != sideVol.PersistentVolumeClaim.ClaimName || outMount.MountPath != sideMount.MountPath {
		t.Errorf("--out=%s is not where the sidecars read %s", out, cfg.Components[0].Path)
	}
	for _, c := range []*corev1.Container{plan, publish} {
		if env(c, "COMPONENTS_DIR") != sideMount.MountPath || env(c, "LIVE_DIR") != liveDir || env(c, "CONFIGMAP") != cfgVol.ConfigMap.Name {
			t.Errorf("%s: COMPONENTS_DIR, LIVE_DIR or CONFIGMAP is not the sidecars'", c.Name)
		}
	}
	if want := env(publish, "COMPONENTS_DIR") + "/refresh.next.safetensors"; out != want {
		t.Errorf("--out=%s, but publish takes %s (refresh.sh's NEXT)", out, want)
	}
	baseArg, _ := flagValue(merge.Args, "base")
	if want := env(plan, "WORK") + "/base.safetensors"; baseArg != want {
		t.Errorf("--base=%s, but plan links %s", baseArg, want)
	}
	for _, c := range []*corev1.Container{plan, merge, publish} {
		if _, v := mountOf(t, job, c, env(plan, "WORK")+"/x"); v.EmptyDir == nil {
			t.Errorf("%s: %s is not the pod's shared emptyDir", c.Name, env(plan, "WORK"))
		}
	}
	if _, v := mountOf(t, job, plan, env(plan, "CONFIG")); v.ConfigMap == nil || v.ConfigMap.Name != cfgVol.ConfigMap.Name {
		t.Errorf("plan reads %s, which is not the ConfigMap %s", env(plan, "CONFIG"), cfgVol.ConfigMap.Name)
	}
	for _, c := range []*corev1.Container{plan, publish} {
		if len(c.Command) != 3 || c.Command[2] != c.Name {
			t.Fatalf("%s runs %v, want the script with %s", c.Name, c.Command, c.Name)
		}
		_, v := mountOf(t, job, c, c.Command[1])
		cm := r.configMaps[v.ConfigMap.Name]
		if cm == nil || cm.Data[filepath.Base(c.Command[1])] != readFile(t, "docker/k8s/live/refresh.sh") {
			t.Errorf("%s: %s is not docker/k8s/live/refresh.sh", c.Name, c.Command[1])
		}
	}

	runMerge(t, merge.Args, s, cfg.Components[0].Path, liveDir, sideMount.MountPath, env(plan, "WORK"))
}

// checkRefreshRBAC: the CronJob's ServiceAccount may get and update the
// sidecars' ConfigMap, and nothing else.
func checkRefreshRBAC(t *testing.T, r *rendered, account, configMap string) {
	t.Helper()
	if account == "" || r.accounts[account] == nil {
		t.Fatalf("the CronJob runs as ServiceAccount %q, which is not defined", account)
	}
	var bound bool
	for _, b := range r.bindings {
		for _, s := range b.Subjects {
			if s.Kind != "ServiceAccount" || s.Name != account {
				continue
			}
			bound = true
			role := r.roles[b.RoleRef.Name]
			if b.RoleRef.Kind != "Role" || role == nil {
				t.Fatalf("RoleBinding %s: role %s %s is not a Role here", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			for _, rule := range role.Rules {
				if !slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.Resources, []string{"configmaps"}) ||
					!slices.Equal(rule.ResourceNames, []string{configMap}) || !slices.Equal(rule.Verbs, []string{"get", "update"}) {
					t.Errorf("Role %s allows %+v: want get and update of ConfigMap %s only", role.Name, rule, configMap)
				}
			}
		}
	}
	if !bound {
		t.Errorf("no RoleBinding gives ServiceAccount %s its Role", account)
	}
}

// runMerge runs the CronJob's calibrate merge in process, its paths moved
// under a temporary directory: live files from two replicas' samplers
// (settings s), one task above --min-samples, and the base the plan step
// links.
func runMerge(t *testing.T, args []string, s livestats.Settings, servedPath, liveDir, componentsDir, work string) {
	t.Helper()
	root := t.TempDir()
	move := func(p string) string { return filepath.Join(root, p) }
	for _, dir := range []string{liveDir, componentsDir, work} {
		if err := os.MkdirAll(move(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const d = 4
	task := s.Tasks[0]
	minSamples, _ := flagValue(args, "min-samples")
	var need int
	for _, c := range minSamples {
		need = need*10 + int(c-'0')
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"pod-0", "pod-1"} {
		rs := s
		rs.Replica, rs.Dir, rs.Fraction, rs.MaxConcurrent = name, move(liveDir), 1, 1
		sm, err := livestats.New(rs, d)
		if err != nil {
			t.Fatal(err)
		}
		model := ""
		for _, m := range rs.Models {
			if m.Task == task.Name {
				model = m.Name
			}
		}
		for range need/2 + 1 {
			x, reason := sm.Admit(livestats.Request{Model: model})
			if x == nil {
				t.Fatalf("not sampled: %v", reason)
			}
			mtl, ind := make([]float32, d), make([]float32, d)
			for i := range mtl {
				mtl[i], ind[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			if err := x.Add(mtl, ind); err != nil {
				t.Fatal(err)
			}
		}
		if err := sm.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	acc := react.NewAccumulator(d)
	for range 50 {
		z := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		if err := acc.AddFloat64(z, z); err != nil {
			t.Fatal(err)
		}
	}
	st, err := acc.Stats(task.Name, task.Expert)
	if err != nil {
		t.Fatal(err)
	}
	served := &react.Components{D: d, Beta: 1, Normalization: react.NormSum, Backbone: s.Backbone, Tasks: []*react.TaskStats{st}}
	if err := componentsfile.Save(move(servedPath), served); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(move(servedPath), move(work)+"/base.safetensors"); err != nil {
		t.Fatal(err)
	}
	moved := make([]string, len(args))
	for i, a := range args {
		moved[i] = a
		for _, dir := range []string{liveDir, componentsDir, work} {
			moved[i] = strings.Replace(moved[i], "="+dir, "="+move(dir), 1)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := calibrate.Main(moved, &stdout, &stderr); code != 0 {
		t.Fatalf("calibrate %v: exit %d\n%s%s", moved, code, stdout.String(), stderr.String())
	}
	out, _ := flagValue(moved, "out")
	c, err := componentsfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tasks[0]; got.Name != task.Name || got.N != int64(2*(need/2+1)) {
		t.Errorf("the merged file's task %s has N=%d, want the live %d:\n%s", got.Name, got.N, 2*(need/2+1), stdout.String())
	}
}

// TestRefreshScript runs refresh.sh's plan and publish with a stand-in for
// kubectl that keeps the ConfigMap in a file and refuses an update of a
// stale resourceVersion, as the API server does: publish renames the merged
// file, points the ConfigMap at it (which the sidecar still loads), and
// prunes; it refuses to publish over a rollout made meanwhile, and fails
// when the ConfigMap changed between its read and its update.
func TestRefreshScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run refresh.sh")
	}
	r := render(t, "docker/k8s/live")
	cj := r.cronJobs["react-refresh"]
	publishC := container(t, &cj.Spec.JobTemplate.Spec.Template.Spec, "publish")
	root := t.TempDir()
	move := func(p string) string { return filepath.Join(root, p) }
	env := []string{"PATH=" + os.Getenv("PATH"), "FAKE_STATE=" + move("state"), "KUBECTL=" + move("kubectl")}
	for _, e := range publishC.Env {
		v := e.Value
		if strings.HasPrefix(v, "/") {
			v = move(v)
		}
		env = append(env, e.Name+"="+v)
	}
	get := func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		t.Fatalf("no %s", name)
		return ""
	}
	comps, live, work := get("COMPONENTS_DIR"), get("LIVE_DIR"), get("WORK")
	for _, dir := range []string{comps, live, work, move("state"), filepath.Dir(get("CONFIG"))} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The ConfigMap as the API server would hold it, paths moved.
	cm := r.configMaps["react-sidecar"].DeepCopy()
	cm.ResourceVersion = "7"
	for k, v := range cm.Data {
		cm.Data[k] = strings.ReplaceAll(v, "/models/react/", comps+"/")
	}
	state, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(move("state/configmap.yaml"), string(state))
	write(get("CONFIG"), cm.Data["sidecar.yaml"])
	served := comps + "/components.safetensors"
	write(served, "served")
	write(move("kubectl"), `#!/bin/sh
# A stand-in for kubectl: get configmap NAME -o yaml; replace -f FILE,
# refused unless FILE's resourceVersion is the stored one.
set -eu
rv() { sed -n 's/^  resourceVersion: "\{0,1\}\([0-9]*\)"\{0,1\}$/\1/p' "$1"; }
case "$1" in
get)
	cat "$FAKE_STATE/configmap.yaml"
	if [ -n "${FAKE_EDIT:-}" ]; then # someone edits it right after
		old=$(rv "$FAKE_STATE/configmap.yaml")
		sed -i "s/^  resourceVersion: .*/  resourceVersion: \"$((old + 1))\"/" "$FAKE_STATE/configmap.yaml"
	fi ;;
replace)
	[ "$(rv "$3")" = "$(rv "$FAKE_STATE/configmap.yaml")" ] || { echo "Error from server (Conflict)" >&2; exit 1; }
	old=$(rv "$3")
	sed "s/^  resourceVersion: .*/  resourceVersion: \"$((old + 1))\"/" "$3" >"$FAKE_STATE/configmap.yaml" ;;
*) exit 2 ;;
esac
`)
	script := repoPath("docker/k8s/live/refresh.sh")
	run := func(step string, extra ...string) (string, error) {
		cmd := exec.Command(sh, script, step)
		cmd.Env = append(slices.Clone(env), extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	for i, name := range []string{"old.live.safetensors", "new.live.safetensors", "notes.txt"} {
		write(filepath.Join(live, name), "x")
		if i != 1 {
			os.Chtimes(filepath.Join(live, name), old, old)
		}
	}
	for i := range 6 {
		p := filepath.Join(comps, "components-live-2026010"+string(rune('1'+i))+"T000000Z.safetensors")
		write(p, "old")
		at := old.Add(time.Duration(i) * time.Hour)
		os.Chtimes(p, at, at)
	}

	if out, err := run("plan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if link, _ := os.Readlink(filepath.Join(work, "base.safetensors")); link != served {
		t.Fatalf("plan linked %q, want %s", link, served)
	}
	write(filepath.Join(comps, "refresh.next.safetensors"), "merged")
	out, err := run("publish")
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	var after corev1.ConfigMap
	data, _ := os.ReadFile(move("state/configmap.yaml"))
	if err := yaml.UnmarshalStrict(data, &after); err != nil {
		t.Fatal(err)
	}
	newCfg := after.Data["sidecar.yaml"]
	newPath := strings.TrimSpace(strings.SplitN(strings.SplitN(newCfg, "path: "+comps+"/components-live-", 2)[1], "\n", 2)[0])
	newPath = comps + "/components-live-" + newPath
	if b, _ := os.ReadFile(newPath); string(b) != "merged" {
		t.Fatalf("the ConfigMap names %s, which is not the merged file:\n%s", newPath, out)
	}
	if strings.Replace(newCfg, newPath, served, 1) != cm.Data["sidecar.yaml"] || after.ResourceVersion != "8" || after.Labels["app.kubernetes.io/part-of"] != "react-triton" {
		t.Errorf("the ConfigMap changed beyond the path (resourceVersion %s, labels %v)", after.ResourceVersion, after.Labels)
	}
	loadSidecarConfig(t, strings.ReplaceAll(newCfg, comps+"/", "/models/react/"))
	if _, err := os.Stat(filepath.Join(comps, "refresh.next.safetensors")); !os.IsNotExist(err) {
		t.Error("refresh.next.safetensors is still there")
	}
	left, _ := filepath.Glob(filepath.Join(live, "*"))
	if len(left) != 2 || !slices.Contains(left, filepath.Join(live, "new.live.safetensors")) || !slices.Contains(left, filepath.Join(live, "notes.txt")) {
		t.Errorf("live files after pruning: %v, want the recent one (and what is not a live file)", left)
	}
	kept, _ := filepath.Glob(filepath.Join(comps, "components-live-*.safetensors"))
	if len(kept) != 5 || !slices.Contains(kept, newPath) {
		t.Errorf("refreshed files kept: %v, want the 5 newest, the new one included", kept)
	}
	if _, err := os.Stat(served); err != nil {
		t.Errorf("the file served before is gone: %v", err)
	}

	// A rollout between plan and publish: publish refuses, nothing changes.
	write(filepath.Join(comps, "refresh.next.safetensors"), "merged again")
	before, _ := os.ReadFile(move("state/configmap.yaml"))
	if out, err := run("publish"); err == nil || !strings.Contains(out, "rolled out meanwhile") {
		t.Errorf("publish after a rollout: %v\n%s", err, out)
	}
	// An edit between publish's read and its update: the update is refused.
	write(get("CONFIG"), newCfg)
	if out, err := run("plan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if out, err := run("publish", "FAKE_EDIT=1"); err == nil || !strings.Contains(out, "Conflict") {
		t.Errorf("publish over an edit: %v\n%s", err, out)
	}
	now, _ := os.ReadFile(move("state/configmap.yaml"))
	if !bytes.Equal(bytes.Replace(now, []byte(`resourceVersion: "9"`), []byte(`resourceVersion: "8"`), 1), before) {
		t.Error("a refused publish changed the ConfigMap")
	}
}
