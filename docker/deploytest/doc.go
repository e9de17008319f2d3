// Package deploytest checks the deployment files under docker/: the
// Kubernetes manifests (rendered by kustomize's own library and decoded
// strictly into the official API types), the compose file (loaded and
// validated by the compose specification's reference library) and the
// Dockerfiles (parsed by BuildKit's parser), against each other, the
// Makefile and the sidecar's and calibrate's real configuration loaders.
//
// It is a module of its own, so that the main module does not depend on
// k8s.io/api, kustomize, compose-go or BuildKit. scripts/test.sh runs it:
//
//	cd docker/deploytest && go test ./...
package deploytest
