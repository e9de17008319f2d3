#!/usr/bin/env bash
# Regenerates docs/REPORT.md from scratch (make report): the paper's tables
# on our zoo, measured with calibrate eval against a real Triton.
#
#   scripts/report.sh [--triton HOST:PORT] [--out FILE]
#
# 1. starts a Triton serving the zoo's backbones, experts and heads (or uses
#    --triton), exports every task's calib split and labelled test split;
# 2. calibrates each backbone (TA, TIES, AdaMerging) with calibrate fit
#    --triton on the whole calib split, and on seeded random 1%, 5% and 10%
#    subsets (--fraction), timing each fit (the offline stage);
#    Each fit also chooses β and the normalisation without labels (--beta
#    auto), which the label-free β section checks against test accuracy.
# 3. runs calibrate eval: Table 1 (equal, priority, one-hot, with the
#    oracle), the 3-task simplex experiment with react, naive and polar
#    aggregation, a β sweep under sum and mean, and the fraction sweep;
# 4. the second zoo (tritonmodels/zoo-effnet, EfficientNet-Lite0, D=1280) on
#    a Triton of its own: TA, TIES and AdaMerging fitted on the whole calib
#    split and on 10%, and Table 1 with the oracle and the linear fits; its
#    result is also copied to tritonmodels/zoo-effnet/eval.json, which
#    tests/test_zoo_effnet.py checks the served models against;
# 5. writes the report (scripts/report.py) from the JSON results, and the
#    figures (calibrate eval --plots) into figures/ beside it. The second
#    zoo's "calibrated from traffic" rows are not measured here: report.py
#    renders them from scripts/traffic-row.sh's record, docs/traffic-row.json.
# Needs make build's bin/calibrate, the venv and the zoo data.
set -euo pipefail
cd "$(dirname "$0")/.."

addr='' report=docs/REPORT.md
while [ $# -gt 0 ]; do
	case $1 in
	--triton) addr=$2; shift 2 ;;
	--out) report=$2; shift 2 ;;
	*) echo "usage: $0 [--triton HOST:PORT] [--out FILE]" >&2; exit 2 ;;
	esac
done
CAL=bin/calibrate
PY=.venv/bin/python
DATA=${ZOO_DATA:-.cache/zoo-data}
[ -x "$CAL" ] || { echo "report: $CAL is missing; run make build" >&2; exit 1; }
[ -x "$PY" ] || { echo "report: no .venv; run make setup" >&2; exit 1; }
scripts/zoo-data.sh >/dev/null
start=$(date +%s)

work=$(mktemp -d)
pid_file=$work/tritonserver.pid
cleanup() {
	scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true
	scripts/triton-down --pid "$work/effnet.pid" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck source=lib/ports.sh
. scripts/lib/ports.sh
# shellcheck source=lib/zoo-triton.sh
. scripts/lib/zoo-triton.sh

tasks=$("$PY" -c 'import json; print(",".join(json.load(open("tritonmodels/zoo/manifest.json"))["tasks"]))')
if [ -z "$addr" ]; then
	addr=$(zoo_triton_up tritonmodels/repo "$pid_file" "$tasks")
	addr=${addr% *}
fi

"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/calib" >/dev/null
"$PY" tritonmodels/demo/export_calib.py --data "$DATA" --out "$work/test" --split test >/dev/null
experts=()
for t in ${tasks//,/ }; do experts+=(--expert "$t=expert_$t"); done
res=$work/results
figs=$(dirname "$report")/figures
mkdir -p "$res" "$figs"
rm -f "$figs"/*.png

# Offline stage: one fit per backbone and calibration fraction, timed.
fit() { # backbone name fraction
	local t0 t1 extra=()
	[ "$3" = 1 ] || extra=(--fraction "$3" --seed 0)
	t0=$(date +%s.%N)
	"$CAL" fit --triton "$addr" --inputs "$work/calib" --tasks "$tasks" --backbone-model "$1" \
		--backbone-output feature "${experts[@]}" --beta auto --beta-report "$res/$2.beta.json" --quiet \
		"${extra[@]}" --out "$res/$2.safetensors" >"$res/$2.fit.txt"
	t1=$(date +%s.%N)
	echo "$2 $3 $(echo "$t1 - $t0" | bc)" >>"$res/fits.txt"
}
for b in ta ties adamerging; do
	for f in 1 0.1 0.05 0.01; do fit "backbone_$b" "${b}_$f" "$f"; done
done

ev() { # name args...
	local name=$1
	shift
	"$CAL" eval --triton "$addr" --data "$work/test" --progress never --json "$res/$name.json" \
		--markdown "$res/$name.md" "$@" 2>>"$res/eval.log"
}
ev table1 --components "TA=$res/ta_1.safetensors" --components "TIES=$res/ties_1.safetensors" \
	--components "AdaMerging=$res/adamerging_1.safetensors" --components "TA 10%=$res/ta_0.1.safetensors" \
	--components "TIES 10%=$res/ties_0.1.safetensors" --components "AdaMerging 10%=$res/adamerging_0.1.safetensors" \
	--set equal --set priority --set one-hot --oracle --beta 0.1 --normalize sum
ev simplex --components "AdaMerging=$res/adamerging_1.safetensors" --components "TA=$res/ta_1.safetensors" \
	--set simplex:letters,greek,fontdigits:6 --set pairwise:letters,greek --set pairwise:fashion,digits \
	--aggregation react,naive,polar --beta 0.1 --normalize sum --plots "$figs"
ev beta --components "AdaMerging=$res/adamerging_1.safetensors" --set equal --set one-hot \
	--normalize sum,mean --beta 0.0001,0.001,0.01,0.1,1,10,100 --plots "$figs"
ev fraction --components "AdaMerging 100%=$res/adamerging_1.safetensors" \
	--components "AdaMerging 10%=$res/adamerging_0.1.safetensors" \
	--components "AdaMerging 5%=$res/adamerging_0.05.safetensors" \
	--components "AdaMerging 1%=$res/adamerging_0.01.safetensors" --set equal --set one-hot \
	--beta 0.1,10 --normalize sum --plots "$work/fraction-figs"
cp "$work/fraction-figs/fraction.png" "$figs/" # its beta.png would replace the β run's
# Label-free β: every fit's held-out choice (--beta auto) against the best β
# by test accuracy, over the whole grid, for every backbone and fraction.
sel=()
for b in ta:TA ties:TIES adamerging:AdaMerging; do
	for f in 1:100% 0.1:10% 0.05:5% 0.01:1%; do
		sel+=(--components "${b#*:} ${f#*:}=$res/${b%%:*}_${f%%:*}.safetensors")
	done
done
ev select "${sel[@]}" --set equal --set one-hot --normalize sum,mean --beta 0.0001,0.001,0.01,0.1,1,10,100
scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true

# The second zoo, EfficientNet-Lite0 (D=1280), on a Triton of its own (its
# models have the same names as the first zoo's). β = 0.1, sum, as Table 1.
eff=$(zoo_triton_up tritonmodels/repo-effnet "$work/effnet.pid" "$tasks")
eff=${eff% *}
for b in ta ties adamerging; do
	for f in 1 0.1; do
		extra=()
		[ "$f" = 1 ] || extra=(--fraction "$f" --seed 0)
		t0=$(date +%s.%N)
		"$CAL" fit --triton "$eff" --inputs "$work/calib" --tasks "$tasks" --backbone-model "backbone_$b" \
			--backbone-output feature "${experts[@]}" --beta 0.1 --normalize sum --quiet \
			"${extra[@]}" --out "$res/effnet_${b}_$f.safetensors" >"$res/effnet_${b}_$f.fit.txt"
		echo "effnet_${b}_$f $f $(echo "$(date +%s.%N) - $t0" | bc)" >>"$res/effnet-fits.txt"
	done
done
"$CAL" eval --triton "$eff" --data "$work/test" --progress never --json "$res/effnet_table1.json" \
	--markdown "$res/effnet_table1.md" --components "TA=$res/effnet_ta_1.safetensors" \
	--components "TIES=$res/effnet_ties_1.safetensors" --components "AdaMerging=$res/effnet_adamerging_1.safetensors" \
	--components "TA 10%=$res/effnet_ta_0.1.safetensors" --components "TIES 10%=$res/effnet_ties_0.1.safetensors" \
	--components "AdaMerging 10%=$res/effnet_adamerging_0.1.safetensors" \
	--set equal --set priority --set one-hot --oracle --betas 0.1 --normalizations sum 2>>"$res/eval.log"
cp "$res/effnet_table1.json" tritonmodels/zoo-effnet/eval.json
# β at D=1280 (AdaMerging), and what the label-free choice (--beta auto,
# the calibrate default grid) picks for it.
"$CAL" eval --triton "$eff" --data "$work/test" --progress never --json "$res/effnet_beta.json" \
	--markdown "$res/effnet_beta.md" --components "AdaMerging=$res/effnet_adamerging_1.safetensors" \
	--set equal --set one-hot --normalizations sum,mean --betas 0.1,1,10,100,1000 2>>"$res/eval.log"
"$CAL" fit --triton "$eff" --inputs "$work/calib" --tasks "$tasks" --backbone-model backbone_adamerging \
	--backbone-output feature "${experts[@]}" --beta auto --beta-report "$res/effnet_auto.beta.json" --quiet \
	--out "$work/effnet_auto.safetensors" >"$res/effnet_auto.fit.txt"
# calibrate solve at D=1280, end to end (reading and checking the 236 MB
# file, the solve, writing the .npy): three runs, each a new preference.
for p in fashion=0.6,mnist=0.4 letters=0.5,greek=0.5 digits=1; do
	t0=$(date +%s.%N)
	"$CAL" solve --components "$res/effnet_adamerging_1.safetensors" --preference "$p" --out "$work/W.npy" 2>/dev/null
	echo "$p $(echo "$(date +%s.%N) - $t0" | bc)" >>"$res/effnet-solve.txt"
done

"$PY" scripts/report.py --results "$res" --out "$report" --seconds "$(($(date +%s) - start))"
echo "report: wrote $report in $(($(date +%s) - start)) s"
