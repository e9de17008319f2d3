#!/usr/bin/env bash
# Issue 26's "calibrated from traffic" row on the second zoo: ReACT's
# statistics learnt by the sidecar's live sampling from traffic, the test
# split's inputs (no labels), against the oracle (the same statistics fitted
# by calibrate eval --oracle on the test split's own features).
#
#   scripts/traffic-row.sh [--backbones ta[,ties,adamerging]] [--record FILE] [--keep DIR]
#
# 1. starts a Triton on tritonmodels/repo-effnet (scripts/lib/zoo-triton.sh:
#    the merged backbones, the experts, the heads, and the tasks' ensembles,
#    the deployed classifiers the traffic goes to);
# 2. per backbone (default ta): a sidecar in front of it with no components
#    file, passing everything through, sampling at fraction 1 every task's
#    ensemble for its task with backbone_<b> as the merged backbone; sends
#    each task's test inputs through it (tritonmodels/demo/traffic.py, the
#    official tritonclient over gRPC; the labels are not in the directory it
#    reads); stops it (the final checkpoint), and runs calibrate merge on its
#    live file with β = 0.1 and sum, as Table 1's fits; prints each task's
#    sample count;
# 3. runs calibrate eval on the test split with every merged file
#    ("TA traffic", ...), equal and one-hot, with --oracle, β = 0.1, sum, and
#    prints the rows beside the oracle's;
# 4. writes the record (default docs/traffic-row.json: the eval's JSON, the
#    sample counts, the commit, the CPU and the seconds) that scripts/report.py
#    renders into docs/REPORT.md's second zoo (make report keeps it).
#
# --keep DIR keeps the work files (logs, live files, components, eval output).
# One Triton at a time: do not run it beside another Triton-heavy job on a
# small machine. Needs make build's bin/calibrate and bin/sidecar, the venv
# (make setup) and the zoo data (scripts/zoo-data.sh, run here).
set -euo pipefail
cd "$(dirname "$0")/.."

backbones=ta record=docs/traffic-row.json keep=''
while [ $# -gt 0 ]; do
	case $1 in
	--backbones) backbones=$2; shift 2 ;;
	--record) record=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	*) echo "usage: $0 [--backbones ta[,ties,adamerging]] [--record FILE] [--keep DIR]" >&2; exit 2 ;;
	esac
done
CAL=bin/calibrate
PY=.venv/bin/python
DATA=${ZOO_DATA:-.cache/zoo-data}
for f in "$CAL" bin/sidecar; do
	[ -x "$f" ] || { echo "traffic-row: $f is missing; run make build" >&2; exit 1; }
done
[ -x "$PY" ] || { echo "traffic-row: no .venv; run make setup" >&2; exit 1; }
declare -A label=([ta]=TA [ties]=TIES [adamerging]=AdaMerging)
for b in ${backbones//,/ }; do
	[ -n "${label[$b]:-}" ] || { echo "traffic-row: --backbones: unknown backbone $b (ta, ties, adamerging)" >&2; exit 2; }
done
scripts/zoo-data.sh >/dev/null
start=$(date +%s)

# shellcheck source=lib/ports.sh
. scripts/lib/ports.sh
# shellcheck source=lib/sidecar.sh
. scripts/lib/sidecar.sh
# shellcheck source=lib/zoo-triton.sh
. scripts/lib/zoo-triton.sh
work=$(mktemp -d)
sidecar_pid=
cleanup() {
	stop_sidecar
	scripts/triton-down --pid "$work/effnet.pid" >/dev/null 2>&1 || true
	if [ -n "$keep" ]; then
		mkdir -p "$keep" && cp -r "$work"/. "$keep"/ && echo "traffic-row: work files in $keep" >&2
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tasks=$("$PY" -c 'import json; print(",".join(json.load(open("tritonmodels/zoo/manifest.json"))["tasks"]))')
"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/test" --split test >/dev/null
mkdir "$work/traffic" # the inputs alone: the traffic has no labels
for t in ${tasks//,/ }; do cp "$work/test/$t.npy" "$work/traffic/"; done

t0=$(date +%s)
# shellcheck disable=SC2086 # the ensembles, one word each
triton=$(zoo_triton_up tritonmodels/repo-effnet "$work/effnet.pid" "$tasks" ${tasks//,/ })
echo "traffic-row: Triton on tritonmodels/repo-effnet ready in $(($(date +%s) - t0)) s (gRPC ${triton% *})"

# sidecar_config BACKBONE LIVEDIR: the sidecar's configuration, sampling at
# fraction 1 every task's ensemble for its task.
sidecar_config() {
	local t
	cat <<-EOF
		triton:
		  grpc: ${triton% *}
		  http: ${triton#* }
		  startup_timeout: 2m
		listen:
		  shutdown_timeout: 2m
		sampling:
		  enabled: true
		  fraction: 1
		  holdout: 0
		  max_concurrent: 2
		  replica: traffic-row
		  beta: 0.1
		  normalize: sum
		  checkpoint:
		    dir: $2
		    interval: 1h
		    window: 24h
		  backbone:
		    model: $1
		    output: feature
		  models:
	EOF
	for t in ${tasks//,/ }; do printf '    - {name: %s, task: %s}\n' "$t" "$t"; done
	echo "  tasks:"
	for t in ${tasks//,/ }; do printf '    - {name: %s, expert: {model: expert_%s, output: feature}}\n' "$t" "$t"; done
}

components=()
for b in ${backbones//,/ }; do
	live=$work/live-$b
	mkdir -p "$live"
	sidecar_config "backbone_$b" "$live" >"$work/sidecar-$b.yaml"
	start_sidecar "$work/sidecar-$b.yaml" "${triton% *}" "${triton#* }" "$work/sidecar-$b.log"
	echo "traffic-row: ${label[$b]}: sidecar ready (gRPC $sidecar_grpc), sampling with backbone_$b"
	t0=$(date +%s)
	"$PY" tritonmodels/demo/traffic.py --sidecar "$sidecar_grpc" --metrics "$sidecar_metrics" \
		--inputs "$work/traffic" --tasks "$tasks" --chunk 64 | tee "$work/traffic-$b.txt"
	stop_sidecar
	echo "$b $(($(date +%s) - t0))" >>"$work/sampling-seconds.txt"
	"$CAL" merge --live-dir "$live" --beta 0.1 --normalize sum --out "$work/traffic_$b.safetensors" |
		tee "$work/merge-$b.txt"
	components+=(--components "${label[$b]} traffic=$work/traffic_$b.safetensors")
done

t0=$(date +%s)
"$CAL" eval --triton "${triton% *}" --data "$work/test" --progress never --json "$work/eval.json" \
	--markdown "$work/eval.md" "${components[@]}" --set equal --set one-hot --oracle \
	--betas 0.1 --normalizations sum 2>"$work/eval.log"
echo "traffic-row: calibrate eval in $(($(date +%s) - t0)) s"
scripts/triton-down --pid "$work/effnet.pid" >/dev/null 2>&1 || true

seconds=$(($(date +%s) - start))
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!docs' || commit="$commit (uncommitted changes)"
"$PY" - "$work" "$record" "$backbones" "$seconds" "$commit" <<-'EOF'
	import datetime, json, os, pathlib, platform, re, sys
	work, record, backbones, seconds, commit = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]
	label = {"ta": "TA", "ties": "TIES", "adamerging": "AdaMerging"}
	cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
	sampling = dict(l.split() for l in (work / "sampling-seconds.txt").read_text().splitlines())
	rec = {
	    "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", "commit": commit,
	    "cores": os.cpu_count(), "cpu": cpu, "seconds": seconds, "chunk": 64,
	    "backbones": {label[b]: {
	        "label": f"{label[b]} traffic", "sampling_seconds": int(sampling[b]),
	        "samples": {m[0]: int(m[1]) for m in re.findall(r"^task (\S+): N=(\d+)", (work / f"merge-{b}.txt").read_text(), re.M)},
	    } for b in backbones},
	    "eval": json.loads((work / "eval.json").read_text()),
	}
	pathlib.Path(record).write_text(json.dumps(rec, indent=1) + "\n")
EOF
"$PY" scripts/report.py --traffic "$record" --traffic-summary
echo "traffic-row: wrote $record in $seconds s"
