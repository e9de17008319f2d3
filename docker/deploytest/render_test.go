package deploytest

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// rendered are the objects of one kustomization, decoded.
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	jobs         map[string]*batchv1.Job
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	claims       map[string]*corev1.PersistentVolumeClaim
	policies     map[string]*networkingv1.NetworkPolicy
	budgets      map[string]*policyv1.PodDisruptionBudget
	cronJobs     map[string]*batchv1.CronJob
	accounts     map[string]*corev1.ServiceAccount
	roles        map[string]*rbacv1.Role
	bindings     map[string]*rbacv1.RoleBinding
	count        int
	kindsAndName []string
}

// render builds a kustomization directory (relative to the repository
// root) with kustomize's library, as `kubectl kustomize` does, and decodes
// every object strictly into its k8s.io/api type: an unknown or misspelt
// field, a duplicate key or a kind this test does not know fails it.
func render(t *testing.T, dir string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), repoPath(dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	r := &rendered{
		deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		claims: map[string]*corev1.PersistentVolumeClaim{}, policies: map[string]*networkingv1.NetworkPolicy{},
		budgets: map[string]*policyv1.PodDisruptionBudget{}, cronJobs: map[string]*batchv1.CronJob{},
		accounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{}, bindings: map[string]*rbacv1.RoleBinding{},
	}
	for _, res := range resources.Resources() {
		data, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		name := res.GetName()
		id := fmt.Sprintf("%s %s/%s", dir, res.GetKind(), name)
		var obj any
		switch gvk := res.GetGvk(); gvk.ApiVersion() + " " + gvk.Kind {
		case "apps/v1 Deployment":
			obj = into(r.deployments, name)
		case "batch/v1 Job":
			obj = into(r.jobs, name)
		case "v1 Service":
			obj = into(r.services, name)
		case "v1 ConfigMap":
			obj = into(r.configMaps, name)
		case "v1 PersistentVolumeClaim":
			obj = into(r.claims, name)
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = into(r.policies, name)
		case "policy/v1 PodDisruptionBudget":
			obj = into(r.budgets, name)
		case "batch/v1 CronJob":
			obj = into(r.cronJobs, name)
		case "v1 ServiceAccount":
			obj = into(r.accounts, name)
		case "rbac.authorization.k8s.io/v1 Role":
			obj = into(r.roles, name)
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			obj = into(r.bindings, name)
		default:
			t.Errorf("%s: apiVersion %s: not a kind this test decodes", id, gvk.ApiVersion())
			continue
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			t.Errorf("%s: strict decoding into k8s.io/api: %v", id, err)
		}
		r.count++
		r.kindsAndName = append(r.kindsAndName, id)
	}
	if r.count == 0 {
		t.Fatalf("%s renders no objects", dir)
	}
	return r
}

// into adds a new zero T under name to m and returns it.
func into[T any](m map[string]*T, name string) *T {
	v := new(T)
	m[name] = v
	return v
}

// readKustomization decodes a kustomization.yaml strictly.
func readKustomization(t *testing.T, dir string) *types.Kustomization {
	t.Helper()
	var k types.Kustomization
	if err := yaml.UnmarshalStrict([]byte(readFile(t, dir, "kustomization.yaml")), &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return &k
}

// TestKustomizationsRender: every kustomization renders, and its objects
// decode strictly.
func TestKustomizationsRender(t *testing.T) {
	for _, dir := range []string{"docker/k8s", "docker/k8s/backend", "docker/k8s/tls", "docker/k8s/calibrate", "docker/k8s/calibrate-merge", "docker/k8s/live"} {
		r := render(t, dir)
		t.Logf("%s: %d objects: %v", dir, r.count, r.kindsAndName)
	}
}

// TestStrictDecodingCatchesTypos: the decoding of render rejects a field
// k8s.io/api does not have (so the other tests can trust it).
func TestStrictDecodingCatchesTypos(t *testing.T) {
	var d appsv1.Deployment
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: b, readinesProbe: {}}]\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &d); err == nil {
		t.Fatal("a misspelt readinessProbe decoded without error")
	}
}
