#!/usr/bin/env bash
# The main job end to end on the bundled zoo (tritonmodels/), on a real
# Triton with the ReACT sidecar in front of it (`make demo`):
#   1. start Triton with tritonmodels/repo on free ports (stopped on exit);
#   2. export each task's unlabelled calibration images (.cache/zoo-data) to
#      <task>.npy, and calibrate: `calibrate fit --triton` runs the merged
#      backbone and each task's expert on Triton over those images, for the
#      AdaMerging and the Task Arithmetic backbones (scripts/zoo-components.sh);
#   3. calibrate inspect;
#   4. start the sidecar in front of Triton with the zoo's configuration
#      (tritonmodels/zoo/sidecar.yaml) pointed at the components just fitted:
#      the zoo's ensembles (fashion, mnist, ...) become controllable models
#      under their usual names;
#   5. one request as a client would send it, with a preference header;
#   6. calibrate eval --sidecar (docs/evaluate.md) on the test splits
#      (exported by tritonmodels/demo/export_calib.py --split test), with
#      the components files just fitted: each task's accuracy with its expert
#      (Individual), through the uncorrected merged backbone ("none") and
#      corrected at the one-hot, priority and equal preferences, for both
#      backbones, with HV and U per preference set; and the same images sent
#      to the ensembles through the sidecar, by their names, with each
#      preference in the react-preference header, whose logits must match
#      the evaluation's (the last table);
#   7. tritonmodels/demo/experiment.py: the zoo's two-arm A/B experiment
#      (fashion-ab: the merged backbone against W_p for fashion=1) through
#      the sidecar, one simulated user keyed by x-user-id per fashion test
#      image (2,000), each reporting its image's true label as the outcome
#      of its request (POST /v2/models/fashion_ab/feedback, under the
#      react-request-id the sidecar returned); per arm, the requests, the
#      accuracy and the mean top-1 confidence, next to the sidecar's per-arm
#      metrics and outcome counters;
#   8. calibrate experiment report (docs/sidecar.md, "Deciding an
#      experiment") reads those counters from the sidecar's /metrics and
#      decides the experiment: per arm the mean with its always-valid
#      interval, the difference to merged, the sample-ratio check, the
#      decision (a few seconds more than the experiment without feedback);
#   9. tritonmodels/demo/backend.py: backend mode, Triton's <task>_react
#      ensembles (our react backend between backbone and head, the preference
#      <task>=1 as a request parameter, with the zoo's shipped components
#      file) next to the plain ensembles and the sidecar: accuracy per task,
#      and the backend's logits checked against the sidecar's.
#
#   scripts/demo.sh [--record FILE]
#
# --record also writes the tables, dated, to FILE (e.g. docs/demo-results.md).
#
# Expects bin/calibrate and bin/sidecar (make build) and the venv (make
# setup). The older demo on precomputed .npy embeddings, without Triton, is
# scripts/demo-npy.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
start_time=$(date +%s)

record=''
while [ $# -gt 0 ]; do
	case $1 in
	--record) record=$2; shift 2 ;;
	*) echo "usage: $0 [--record FILE]" >&2; exit 2 ;;
	esac
done

CAL=bin/calibrate
PY=.venv/bin/python
DATA=${ZOO_DATA:-.cache/zoo-data}
[ -x "$CAL" ] && [ -x bin/sidecar ] || { echo "demo: bin/calibrate or bin/sidecar is missing; run make build" >&2; exit 1; }
[ -x "$PY" ] || { echo "demo: no .venv; run make setup" >&2; exit 1; }
[ -f tritonmodels/zoo/manifest.json ] || { echo "demo: the zoo is not built (tritonmodels/zoo/manifest.json); run make zoo" >&2; exit 1; }
[ -d "$DATA/fashion" ] || scripts/zoo-data.sh

. scripts/lib/ports.sh
. scripts/lib/sidecar.sh
work=$(mktemp -d)
pid_file=$work/tritonserver.pid
sidecar_pid=
cleanup() {
	stop_sidecar
	scripts/triton-down --pid "$pid_file" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

step "start Triton with tritonmodels/repo"
started=
for attempt in 1 2 3; do
	read -r tg th tm < <(free_ports)
	if scripts/triton-up --repo tritonmodels/repo --grpc-port "$tg" --http-port "$th" --metrics-port "$tm" \
		--pid "$pid_file" --log "$work/tritonserver.log" --timeout 300 >"$work/triton-up.out" 2>&1; then
		cat "$work/triton-up.out"
		started=1
		break
	fi
	echo "demo: Triton did not start (attempt $attempt)" >&2
done
[ -n "$started" ] || { cat "$work/triton-up.out" >&2; exit 1; }
triton=127.0.0.1:$tg

step "calibrate: calibrate fit --triton, backbone_adamerging and backbone_ta against expert_<task>, on the calib splits"
fit_start=$(date +%s%N)
scripts/zoo-components.sh --triton "$triton" --out "$work"
fit_ms=$((($(date +%s%N) - fit_start) / 1000000))
fit_s=$((fit_ms / 1000)).$((fit_ms % 1000 / 100))

step "inspect"
"$CAL" inspect "$work/components.safetensors"

step "start the sidecar in front of Triton, with the zoo's configuration and these components"
cp tritonmodels/zoo/sidecar.yaml "$work/sidecar.yaml" # its relative paths now name the fresh files
start_sidecar "$work/sidecar.yaml" "$triton" "127.0.0.1:$th" "$work/sidecar.log" || exit 1
echo "sidecar: gRPC $sidecar_grpc, HTTP $sidecar_http, metrics http://$sidecar_metrics/metrics"
echo "the zoo's ensembles are now controllable, under their usual names:"
curl -s "http://$sidecar_http/v2/models/fashion/config" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)
print("  fashion:", c["parameters"]["react.backbone"]["string_value"], "->", c["parameters"]["react.heads"]["string_value"],
      "| presets:", c["parameters"]["react.presets"]["string_value"])'

step "one request, as a client sends it: the fashion ensemble, preference fashion=0.6,mnist=0.4 in a header"
"$PY" - "$sidecar_grpc" "$DATA" <<'PY'
import sys
import numpy as np
import tritonclient.grpc as grpcclient
sys.path.insert(0, "tritonmodels/demo")
from export_calib import images
client = grpcclient.InferenceServerClient(sys.argv[1])
x, y = images(sys.argv[2], "fashion", "test")
inp = grpcclient.InferInput("image", [8, 1, 28, 28], "FP32")
inp.set_data_from_numpy(x[:8])
for pref in ("none", "fashion=0.6,mnist=0.4"):
    r = client.infer("fashion", [inp], headers={"react-preference": pref})
    applied = r.get_response().parameters["react-preference"].string_param
    print(f"  react-preference: {pref:<22} -> applied {applied:<22} predictions {r.as_numpy('logits').argmax(1)} (labels {y[:8]})")
PY

step "evaluate on the test splits through the sidecar: calibrate eval --sidecar"
"$PY" tritonmodels/demo/export_calib.py --split test --data "$DATA" --out "$work/test" >/dev/null
"$CAL" eval --triton "$triton" --sidecar "$sidecar_grpc" --data "$work/test" \
	--components AdaMerging="$work/components.safetensors" --components TA="$work/components_ta.safetensors" \
	--sidecar-model AdaMerging='{task}' --sidecar-model TA='{task}_ta' \
	--set one-hot --set priority --set equal --markdown "$work/results.md" --json "$work/results.json"
cat "$work/results.md"

step "A/B experiment fashion-ab through the sidecar, each user reporting its true label (tritonmodels/demo/experiment.py)"
"$PY" tritonmodels/demo/experiment.py --sidecar "$sidecar_grpc" --sidecar-http "$sidecar_http" --metrics "$sidecar_metrics" \
	--data "$DATA" --markdown "$work/experiment.md"

step "decide the experiment from the sidecar's outcome counters: calibrate experiment report"
"$CAL" experiment report --experiment fashion-ab --sidecar-config "$work/sidecar.yaml" \
	--metrics "http://$sidecar_metrics/metrics" | tee "$work/report.txt"

step "backend mode: Triton's <task>_react ensembles (backbone -> react -> head) against the sidecar (tritonmodels/demo/backend.py)"
"$PY" tritonmodels/demo/backend.py --triton "$triton" --sidecar "$sidecar_grpc" --data "$DATA" --markdown "$work/backend.md"

elapsed=$(($(date +%s) - start_time))
step "done in ${elapsed}s (calibration from Triton: ${fit_s}s for both backbones)"

# --record: the dated run between the markers of FILE (kept around it: notes
# written by hand), or a new FILE.
if [ -n "$record" ]; then
	{
		echo "Recorded by \`scripts/demo.sh --record $record\` (what \`make demo\` runs) on $(date -u '+%Y-%m-%d %H:%M UTC'),"
		echo "$(nproc) CPU cores: ${elapsed} s in all, Triton start-up included; calibrating both backbones from Triton took ${fit_s} s."
		echo "Calibration: each task's unlabelled \`calib\` split ($("$PY" -c "
import json; m=json.load(open('tritonmodels/zoo/manifest.json'))
print(', '.join(f\"{t} {v['sizes']['calib']}\" for t, v in m['tasks'].items()))") images),"
		echo "backbone_adamerging and backbone_ta against expert_<task>, β=0.1, sum. The accuracies are \`calibrate eval --sidecar\`'s"
		echo "on the labelled \`test\` splits: evaluated on Triton's features, and served by the sidecar (the preference in the"
		echo "react-preference header), its logits checked against the evaluation's at every point (the last table)."
		echo "Zoo: \`tritonmodels/zoo/manifest.json\` sha256 $(sha256sum tritonmodels/zoo/manifest.json | cut -c1-16)…"
		echo
		cat "$work/results.md"
		echo
		echo "A/B experiment \`fashion-ab\` (tritonmodels/zoo/sidecar.yaml) on \`fashion_ab\`: one user keyed by \`x-user-id\` per fashion test image,"
		echo "each reporting its image's true label as its request's outcome (\`POST /v2/models/fashion_ab/feedback\`):"
		echo
		cat "$work/experiment.md"
		echo
		echo "The decision, \`calibrate experiment report --experiment fashion-ab --sidecar-config sidecar.yaml --metrics http://…/metrics\`:"
		echo
		echo '```'
		cat "$work/report.txt"
		echo '```'
		echo
		echo "Backend mode: Triton's \`<task>_react\` ensembles (our \`react\` backend between backbone and head, the preference as a request parameter), the plain ensembles and the sidecar, on the whole test splits:"
		echo
		cat "$work/backend.md"
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
