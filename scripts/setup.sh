#!/usr/bin/env bash
# Installs every dependency of the project. Idempotent: each step is skipped
# when what it installs is already there, so `make test` stays fast on a
# machine that has run it before.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "setup: Go modules"
go mod download

for step in scripts/setup.d/*.sh; do
	[ -e "$step" ] || continue
	echo "setup: $(basename "$step")"
	bash "$step"
done
