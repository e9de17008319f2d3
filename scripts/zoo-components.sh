#!/usr/bin/env bash
# Calibrates a zoo's components files:
#
#   --zoo vit (default): the files shipped in tritonmodels/zoo/ and served by
#   `make serve` and `make demo`,
#     tritonmodels/zoo/components.safetensors      backbone_adamerging vs expert_<task>
#     tritonmodels/zoo/components_ta.safetensors   backbone_ta         vs expert_<task>
#   --zoo effnet: tritonmodels/zoo-effnet/components.safetensors (adamerging),
#     which the repo-effnet react model reads; at D=1280 it is 236 MB, so it
#     is built (by make zoo ZOO=effnet, or by tests/test_zoo_effnet.py when
#     missing) and git-ignored, never committed
#
# each by `calibrate fit --triton` over every task's unlabelled calib split,
# β=0.1, sum normalisation (the paper's setting).
#
#   scripts/zoo-components.sh [--zoo vit|effnet] [--triton HOST:PORT] [--out DIR]
#
# --triton uses a Triton already serving the zoo's repository (gRPC) instead
# of starting one (which loads only the backbones and experts it needs);
# --out writes the files to DIR instead (tests compare a fresh calibration
# with the shipped files this way). Needs bin/calibrate (make build), the
# venv (make setup) and the zoo data (scripts/zoo-data.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

addr='' out='' zoo=vit
while [ $# -gt 0 ]; do
	case $1 in
	--zoo) zoo=$2; shift 2 ;;
	--triton) addr=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--zoo vit|effnet] [--triton HOST:PORT] [--out DIR]" >&2; exit 2 ;;
	esac
done
case $zoo in
vit) dir=tritonmodels/zoo repo=tritonmodels/repo
	pairs=("backbone_adamerging components.safetensors" "backbone_ta components_ta.safetensors") ;;
effnet) dir=tritonmodels/zoo-effnet repo=tritonmodels/repo-effnet
	pairs=("backbone_adamerging components.safetensors") ;;
*) echo "zoo-components: unknown zoo $zoo (want vit or effnet)" >&2; exit 2 ;;
esac
out=${out:-$dir}

CAL=bin/calibrate
PY=.venv/bin/python
DATA=${ZOO_DATA:-.cache/zoo-data}
[ -x "$CAL" ] || { echo "zoo-components: $CAL is missing; run make build" >&2; exit 1; }
[ -x "$PY" ] || { echo "zoo-components: no .venv; run make setup" >&2; exit 1; }
[ -d "$DATA/fashion" ] || scripts/zoo-data.sh

work=$(mktemp -d)
pid_file=$work/tritonserver.pid
cleanup() {
	scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tasks=$("$PY" -c 'import json, sys; print(",".join(json.load(open(sys.argv[1]))["tasks"]))' "$dir/manifest.json")
. scripts/lib/ports.sh
if [ -z "$addr" ]; then
	# Only the models the fits call (the react models need the very files
	# this script writes).
	load=()
	for pair in "${pairs[@]}"; do load+=(--load-model="${pair%% *}"); done
	for t in ${tasks//,/ }; do load+=(--load-model="expert_$t"); done
	for attempt in 1 2 3; do
		read -r grpc_port http_port metrics_port < <(free_ports)
		if scripts/triton-up --repo "$repo" --grpc-port "$grpc_port" --http-port "$http_port" \
			--metrics-port "$metrics_port" --pid "$pid_file" --log "$work/tritonserver.log" --timeout 300 \
			-- --model-control-mode=explicit "${load[@]}" >/dev/null; then
			addr=127.0.0.1:$grpc_port
			break
		fi
		echo "zoo-components: Triton did not start (attempt $attempt)" >&2
	done
	[ -n "$addr" ] || exit 1
fi

"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/calib" >/dev/null
experts=()
for t in ${tasks//,/ }; do experts+=(--expert "$t=expert_$t"); done
mkdir -p "$out"
for pair in "${pairs[@]}"; do
	read -r backbone file <<<"$pair"
	"$CAL" fit --triton "$addr" --inputs "$work/calib" --tasks "$tasks" \
		--backbone-model "$backbone" --backbone-output feature "${experts[@]}" \
		--beta 0.1 --normalize sum --out "$out/$file"
done
