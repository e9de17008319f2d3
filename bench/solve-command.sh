#!/usr/bin/env bash
# `calibrate solve` as a user runs it, against the same job as a Python user
# writes it (bench/solve_scipy.py: safetensors, numpy, SciPy), timed as
# whole processes (start-up, reading the file, the solve, writing W_p),
# alternating, --rounds rounds (default 7), on one thread. The components
# file is the synthetic D=768, T=8 one of bench/sidecar-controllable.sh
# (made by bench/synth-components.py and calibrate fit, cached in
# .cache/bench/synth/). The preference weighs all eight tasks.
#
#   bench/solve-command.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=7
[ "${1:-}" != --rounds ] || rounds=$2
PY=.venv/bin/python
comps=.cache/bench/synth/components.safetensors
make -s build
if [ ! -f "$comps" ]; then
	mkdir -p .cache/bench/synth/emb
	"$PY" bench/synth-components.py .cache/bench/synth/emb
	bin/calibrate fit --embeddings .cache/bench/synth/emb --beta 0.1 --out "$comps" >/dev/null
fi
pref=t0=1,t1=1,t2=1,t3=1,t4=1,t5=1,t6=1,t7=1
export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ms() { local s=$(date +%s%N); "$@" >/dev/null; echo $((($(date +%s%N) - s) / 1000)); }
go_t=() py_t=() gogo_t=()
make -s build-go
for r in $(seq "$rounds"); do
	go_t+=("$(ms bin/calibrate solve --components "$comps" --preference "$pref" --out "$work/go.npy")")
	py_t+=("$(ms "$PY" bench/solve_scipy.py "$comps" "$pref" "$work/py.npy")")
	gogo_t+=("$(ms bin/go/calibrate solve --components "$comps" --preference "$pref" --out "$work/gogo.npy")")
done
"$PY" - "$work" "${go_t[*]}" "${py_t[*]}" "${gogo_t[*]}" <<'PY'
import statistics, sys
import numpy as np
work = sys.argv[1]
go, py, gogo = ([int(x) / 1000 for x in a.split()] for a in sys.argv[2:5])
a, b = np.load(f"{work}/go.npy").astype(np.float64), np.load(f"{work}/py.npy").astype(np.float64)
print(f"| command | median ms | runs (ms) |\n|---|---:|---|")
for name, t in (("bin/calibrate solve (OpenBLAS)", go), ("python bench/solve_scipy.py (SciPy)", py), ("bin/go/calibrate solve (pure Go)", gogo)):
    print(f"| {name} | {statistics.median(t):.0f} | {', '.join(f'{x:.0f}' for x in t)} |")
ratio = statistics.median([g / p for g, p in zip(go, py)])
print(f"\nOpenBLAS command ÷ SciPy script, median of the per-round ratios: {ratio:.2f}")
print(f"the two W_p agree to {np.abs(a - b).max() / np.abs(b).max():.1e} (max difference over max entry)")
PY
