#!/usr/bin/env bash
# The Go modules of docker/deploytest, the module of its own that checks
# the deployment files (docs/deploy.md): kustomize's library, k8s.io/api,
# compose-go and BuildKit's Dockerfile parser, at the versions its go.sum
# pins. Idempotent: go mod download skips what the module cache holds.
set -euo pipefail
cd "$(dirname "$0")/../../docker/deploytest"
go mod download
