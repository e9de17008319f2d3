// Package deploytest checks the deployment files under docker/: the
// Kubernetes manifests (rendered by kustomize's own library and decoded
// strictly into the official API types), the compose file (loaded and
// validated by the compose specification's reference library), the
// Dockerfiles (parsed by BuildKit's parser) and the Prometheus alert rules
// (parsed by Prometheus' model/rulefmt and evaluated by its rule manager
// and PromQL engine, package alerteval), against each other, the Makefile
// and the sidecar's and calibrate's real configuration loaders.
//
// It is a module of its own, so that the main module does not depend on
// k8s.io/api, kustomize, compose-go, BuildKit or Prometheus.
// scripts/test.sh runs it:
//
//	cd docker/deploytest && go test ./...
//
// cmd/alerteval evaluates the alert rules on a load script of series for
// tests/test_sidecar_sampling.py.
package deploytest
