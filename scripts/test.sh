#!/usr/bin/env bash
# Runs every test: the Go unit, property and fuzz-corpus tests, then the
# interoperability and end-to-end tests that need the Python venv and a real
# Triton. REACT_E2E=1 makes those tests fail, not skip, when what they need
# is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export REACT_E2E=1
go test -count=1 ./...
