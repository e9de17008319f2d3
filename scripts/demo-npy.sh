#!/usr/bin/env bash
# The calibrate workflow from precomputed .npy embeddings, without Triton
# (scripts/demo.sh, `make demo`, runs the real zoo on Triton instead), on
# the bundled example (examples/embeddings: three synthetic tasks, D=16, a
# few hundred paired rows each): fit the components, inspect them, then solve W_p for several
# preferences and measure, on held-out rows (examples/heldout) that fit never
# saw, the mean squared error ‖W z_mtl − z_ind‖² per task against the
# uncorrected error ‖z_mtl − z_ind‖². Expects bin/calibrate (make build).
set -euo pipefail
cd "$(dirname "$0")/.."

CAL=bin/calibrate
[ -x "$CAL" ] || { echo "demo-npy: $CAL is missing; run make build" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/eval" ./examples/eval

step() { printf '\n== %s\n' "$*"; }

step "fit: per-task statistics from examples/embeddings"
"$CAL" fit --embeddings examples/embeddings --beta 0.1 --out "$work/components.safetensors" \
	--backbone-model demo_merged --backbone-version 1 --backbone-output features \
	--expert cars=demo_cars --expert dtd=demo_dtd --expert svhn=demo_svhn

step "inspect"
"$CAL" inspect "$work/components.safetensors"

for pref in cars=1 dtd=1 svhn=1 cars=1,dtd=1,svhn=1 cars=0.6,dtd=0.4; do
	step "solve --preference $pref"
	"$CAL" solve --components "$work/components.safetensors" --preference "$pref" --out "$work/W.npy"
	"$work/eval" -heldout examples/heldout -w "$work/W.npy"
done

step "the same equal preference with the naive baseline (Σ p_t Ŵ_t)"
"$CAL" solve --components "$work/components.safetensors" --preference cars=1,dtd=1,svhn=1 --method naive --out "$work/W.npy"
"$work/eval" -heldout examples/heldout -w "$work/W.npy"
