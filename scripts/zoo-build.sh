#!/usr/bin/env bash
# `make zoo`: rebuilds the demo model zoo from scratch, deterministically, on
# the CPU, in well under 30 minutes on a 2-core machine:
#
#   data      scripts/zoo-data.sh -> .cache/zoo-data/<task>/{train,calib,test}.npz
#   pretrain  rotation prediction on all train images, no labels -> base
#   finetune  a cosine head per task on the base, then one expert per task
#   merge     Task Arithmetic, TIES-Merging, layer-wise AdaMerging
#   export    ONNX files + tritonmodels/zoo/manifest.json
#   evaluate  onnxruntime on test -> tritonmodels/zoo/results.json and the
#             table in tritonmodels/README.md
#   repo      tritonmodels/repo from the manifest (make_repo.py)
#   calibrate the shipped components files, on Triton serving that repo
#             (scripts/zoo-components.sh)
#
# Checkpoints go to .cache/zoo-models (git-ignored); stage timings to
# .cache/zoo-models/timings.json. Everything runs under `nice -n 19` with one
# thread. ZOO_SKIP_DATA=1 skips the data step (for reruns).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.cache/zoo-venv
req=tritonmodels/zoo/requirements.txt

start=$(date +%s)
if [ "${ZOO_SKIP_DATA:-0}" != 1 ]; then
	scripts/zoo-data.sh
	echo "zoo: data step took $(($(date +%s) - start)) s"
fi

# Debian's CPU torch and onnx; pip's default torch wheel pulls GBs of CUDA.
. scripts/lib/debian.sh
ensure_debian_packages zoo python3.11 python3.11-venv python3-torch python3-onnx python3-numpy python3-pil

stamp=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$stamp" ]; then
	echo "zoo: creating $venv"
	rm -rf "$venv"
	/usr/bin/python3.11 -m venv --system-site-packages "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
	echo "$stamp" >"$venv/.requirements.sha256"
fi

export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
rm -rf .cache/zoo-models
python="$(pwd)/$venv/bin/python"
py() { nice -n 19 "$python" "$@"; }
cd tritonmodels/zoo
py pretrain.py
py finetune.py
py merge.py
py export.py
py evaluate.py
cd ../..
# The Triton repository's configs follow the manifest (stdlib only).
"$python" tritonmodels/make_repo.py
# The components files the zoo ships, calibrated on the new models.
make -s build
scripts/zoo-components.sh
echo "zoo: done in $(($(date +%s) - start)) s (stage timings in .cache/zoo-models/timings.json)"
