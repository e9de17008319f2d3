#!/usr/bin/env bash
# The main job end to end on the bundled zoo (tritonmodels/), on a real
# Triton (`make demo`):
#   1. start Triton with tritonmodels/repo on free ports (stopped on exit);
#   2. export each task's unlabelled calibration images (.cache/zoo-data) to
#      <task>.npy;
#   3. calibrate fit --triton: the merged backbone (backbone_adamerging) and
#      each task's expert (expert_<task>) run on Triton over those images;
#   4. calibrate inspect;
#   5. calibrate solve for each one-hot preference, each "priority" one (one
#      task at 0.5, the others sharing 0.5), the uniform one and
#      fashion=0.6,mnist=0.4, for three settings: sum β=0.1 (the paper's and
#      the default), mean β=1e-3 and mean β=1e-2 (the statistics are fitted
#      once; β and the normalisation are chosen at solve time);
#   6. tritonmodels/demo/evaluate.py: test accuracy through Triton with the
#      official tritonclient, for the experts, the uncorrected merged
#      backbone and ReACT at every preference, with HV and U.
#
#   scripts/demo.sh [--triton HOST:PORT] [--record FILE]
#
# --triton uses a Triton already serving tritonmodels/repo (gRPC) instead of
# starting one; --record also writes the tables, dated, to FILE (e.g.
# docs/demo-results.md).
#
# Expects bin/calibrate (make build) and the venv (make setup). The older demo
# on precomputed .npy embeddings, without Triton, is scripts/demo-npy.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
start_time=$(date +%s)

record='' addr=''
while [ $# -gt 0 ]; do
	case $1 in
	--record) record=$2; shift 2 ;;
	--triton) addr=$2; shift 2 ;;
	*) echo "usage: $0 [--triton HOST:PORT] [--record FILE]" >&2; exit 2 ;;
	esac
done

CAL=bin/calibrate
PY=.venv/bin/python
DATA=${ZOO_DATA:-.cache/zoo-data}
[ -x "$CAL" ] || { echo "demo: $CAL is missing; run make build" >&2; exit 1; }
[ -x "$PY" ] || { echo "demo: no .venv; run make setup" >&2; exit 1; }
[ -f tritonmodels/zoo/manifest.json ] || { echo "demo: the zoo is not built (tritonmodels/zoo/manifest.json); run make zoo" >&2; exit 1; }
[ -d "$DATA/fashion" ] || scripts/zoo-data.sh

work=$(mktemp -d)
pid_file=$work/tritonserver.pid
cleanup() {
	scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

start_triton() {
	local attempt grpc_port http_port metrics_port
	for attempt in 1 2 3; do
		read -r grpc_port http_port metrics_port < <(free_ports)
		if scripts/triton-up --repo tritonmodels/repo --grpc-port "$grpc_port" --http-port "$http_port" \
			--metrics-port "$metrics_port" --pid "$pid_file" --log "$work/tritonserver.log" --timeout 300 \
			>"$work/triton-up.out" 2>&1; then
			cat "$work/triton-up.out"
			addr=127.0.0.1:$grpc_port
			return 0
		fi
		echo "demo: Triton did not start (attempt $attempt)" >&2
	done
	cat "$work/triton-up.out" >&2
	return 1
}
# free_ports, shared with the other scripts that start a Triton
. scripts/lib/ports.sh
if [ -z "$addr" ]; then
	step "start Triton with tritonmodels/repo"
	start_triton
else
	step "use the Triton at $addr"
fi

tasks=$("$PY" -c 'import json; print(" ".join(json.load(open("tritonmodels/zoo/manifest.json"))["tasks"]))')

step "export the calibration images (unlabelled calib split) to <task>.npy"
"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/calib"

step "fit: backbone_adamerging vs expert_<task> on Triton at $addr"
experts=()
for t in $tasks; do experts+=(--expert "$t=expert_$t"); done
fit_start=$(date +%s%N)
"$CAL" fit --triton "$addr" --inputs "$work/calib" --tasks "${tasks// /,}" \
	--backbone-model backbone_adamerging --backbone-output feature "${experts[@]}" \
	--beta 0.1 --normalize sum --out "$work/components.safetensors"
fit_ms=$((($(date +%s%N) - fit_start) / 1000000))
fit_s=$((fit_ms / 1000)).$((fit_ms % 1000 / 100))

step "inspect"
"$CAL" inspect "$work/components.safetensors"

# The preferences: one-hot, priority (0.5 on one task), uniform, a two-task mix.
prefs=()
for t in $tasks; do prefs+=("$t=1"); done
for t in $tasks; do
	p="$t=5"
	for o in $tasks; do [ "$o" = "$t" ] || p+=",$o=1"; done
	prefs+=("$p")
done
uniform=
for t in $tasks; do uniform+="${uniform:+,}$t=1"; done
prefs+=("$uniform" "fashion=0.6,mnist=0.4")

settings=("sum 0.1" "mean 0.001" "mean 0.01")
step "solve: ${#prefs[@]} preferences x ${#settings[@]} settings (sum β=0.1, mean β=1e-3, mean β=1e-2)"
mkdir -p "$work/W"
plan=$work/plan.tsv
: >"$plan"
i=0
for s in "${settings[@]}"; do
	read -r norm beta <<<"$s"
	for p in "${prefs[@]}"; do
		i=$((i + 1))
		"$CAL" solve --components "$work/components.safetensors" --preference "$p" \
			--normalize "$norm" --beta "$beta" --out "$work/W/$i.npy" >/dev/null
		printf '%s β=%s\t%s\t%s\n' "$norm" "$beta" "$p" "$work/W/$i.npy" >>"$plan"
	done
done
echo "wrote $i matrices W_p"
echo "e.g. calibrate solve --components components.safetensors --preference fashion=0.6,mnist=0.4 --out W.npy"

step "evaluate on the test splits through Triton (tritonmodels/demo/evaluate.py)"
"$PY" tritonmodels/demo/evaluate.py --triton "$addr" --data "$DATA" --plan "$plan" --markdown "$work/results.md"

elapsed=$(($(date +%s) - start_time))
step "done in ${elapsed}s (fit from Triton: ${fit_s}s)"

# --record: the dated run between the markers of FILE (kept around it: notes
# written by hand), or a new FILE.
if [ -n "$record" ]; then
	{
		echo "Recorded by \`scripts/demo.sh --record $record\` (what \`make demo\` runs) on $(date -u '+%Y-%m-%d %H:%M UTC'),"
		echo "$(nproc) CPU cores: ${elapsed} s in all, Triton start-up included; the fit from Triton took ${fit_s} s."
		echo "Calibration: each task's unlabelled \`calib\` split ($("$PY" -c "
import json; m=json.load(open('tritonmodels/zoo/manifest.json'))
print(', '.join(f\"{t} {v['sizes']['calib']}\" for t, v in m['tasks'].items()))") images),"
		echo "backbone_adamerging against expert_<task>, fitted once; evaluation on the labelled \`test\` splits."
		echo "Zoo: \`tritonmodels/zoo/manifest.json\` sha256 $(sha256sum tritonmodels/zoo/manifest.json | cut -c1-16)…"
		echo
		cat "$work/results.md"
	} >"$work/record.md"
	"$PY" - "$record" "$work/record.md" <<'PY'
import pathlib, sys
path, body = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).read_text()
begin, end = "<!-- demo-run:begin -->", "<!-- demo-run:end -->"
text = path.read_text() if path.exists() else f"# Demo results\n\n{begin}\n{end}\n"
if begin not in text or end not in text:
    sys.exit(f"demo: {path} lacks the {begin} ... {end} markers")
pre, rest = text.split(begin, 1)
path.write_text(pre + begin + "\n" + body + end + rest.split(end, 1)[1])
PY
	echo "recorded in $record"
fi
