#!/usr/bin/env bash
# Calibrates the zoo's components files, the ones shipped in
# tritonmodels/zoo/ and served by `make serve` and `make demo`:
#
#   tritonmodels/zoo/components.safetensors      backbone_adamerging vs expert_<task>
#   tritonmodels/zoo/components_ta.safetensors   backbone_ta         vs expert_<task>
#
# each by `calibrate fit --triton` over every task's unlabelled calib split,
# β=0.1, sum normalisation (the paper's setting).
#
#   scripts/zoo-components.sh [--triton HOST:PORT] [--out DIR]
#
# --triton uses a Triton already serving tritonmodels/repo (gRPC) instead of
# starting one; --out writes the files to DIR instead (tests compare a fresh
# calibration with the shipped files this way). Needs bin/calibrate (make
# build), the venv (make setup) and the zoo data (scripts/zoo-data.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

addr='' out=tritonmodels/zoo
while [ $# -gt 0 ]; do
	case $1 in
	--triton) addr=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--triton HOST:PORT] [--out DIR]" >&2; exit 2 ;;
	esac
done

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

. scripts/lib/ports.sh
if [ -z "$addr" ]; then
	for attempt in 1 2 3; do
		read -r grpc_port http_port metrics_port < <(free_ports)
		if scripts/triton-up --repo tritonmodels/repo --grpc-port "$grpc_port" --http-port "$http_port" \
			--metrics-port "$metrics_port" --pid "$pid_file" --log "$work/tritonserver.log" --timeout 300 >/dev/null; then
			addr=127.0.0.1:$grpc_port
			break
		fi
		echo "zoo-components: Triton did not start (attempt $attempt)" >&2
	done
	[ -n "$addr" ] || exit 1
fi

tasks=$("$PY" -c 'import json; print(",".join(json.load(open("tritonmodels/zoo/manifest.json"))["tasks"]))')
"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/calib" >/dev/null
experts=()
for t in ${tasks//,/ }; do experts+=(--expert "$t=expert_$t"); done
mkdir -p "$out"
for pair in "backbone_adamerging components.safetensors" "backbone_ta components_ta.safetensors"; do
	read -r backbone file <<<"$pair"
	"$CAL" fit --triton "$addr" --inputs "$work/calib" --tasks "$tasks" \
		--backbone-model "$backbone" --backbone-output feature "${experts[@]}" \
		--beta 0.1 --normalize sum --out "$out/$file"
done
