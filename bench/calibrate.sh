#!/usr/bin/env bash
# calibrate fit --triton against Triton alone, and its peak memory.
#
#   bench/calibrate.sh [--rounds N] [--repeat K] [--chunk B] [--in-flight F]
#       [-d SECONDS] [--warmup SECONDS] [--out FILE]
#
# Throughput: on the zoo (backbone_adamerging and expert_fashion, image
# [1,28,28], D=64), each round runs, in turn, so that all three see the same
# machine load:
#   npy      calibrate fit of task fashion from a .npy file of K times its
#            calibration split (1000 × K samples), --chunk B (default 256)
#            and --in-flight F (default 4);
#   png      the same from a folder of the same images as PNG files, decoded
#            and preprocessed by calibrate;
#   triton   bench/loadgen -mode pair: the same Go gRPC stack sending bare
#            inference, batches of B random images to both models at once,
#            F batches in flight, for -d seconds (default 10) after --warmup
#            (default 2): Triton alone on the same models and batch size.
# A fit's samples/s is its own summary line's (the task's samples over the
# time from its first request to its last answer). The table gives the
# medians over --rounds rounds (default 3) and each way's ratio to Triton
# alone (the median of the per-round ratios); the target is ≥ 0.9.
#
# Memory: the peak RSS (/usr/bin/time's maximum resident set size) of
# calibrate fit over the three tasks fashion, mnist and digits, from .npy
# and from PNG, at 1× and K× (default 10×) the calibration split (2297 and
# 2297·K samples).
#
# It builds calibrate (-tags openblas, as make build) and loadgen into
# .cache/bench, writes the data with scripts/zoo-png.py into a temporary
# folder under .cache/bench (removed at the end), starts one Triton
# (scripts/triton-up, only the four models) on free ports and stops it on any
# exit. The report (markdown) goes to stdout and to --out, by default
# bench/results/calibrate-DATE.md (-2, -3... rather than overwrite).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
rounds=3 repeat=10 chunk=256 in_flight=4 seconds=10 warmup=2 results=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	--chunk) chunk=$2; shift 2 ;;
	--in-flight) in_flight=$2; shift 2 ;;
	-d | --duration) seconds=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--out) results=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "bench: unknown argument $1" >&2; usage ;;
	esac
done
for n in "$rounds" "$repeat" "$chunk" "$in_flight" "$seconds" "$warmup"; do
	case $n in '' | *[!0-9]*) echo "bench: '$n' is not a whole number" >&2; exit 2 ;; esac
done
[ "$rounds" -ge 1 ] && [ "$repeat" -ge 1 ] && [ "$chunk" -ge 1 ] && [ "$in_flight" -ge 1 ] && [ "$seconds" -ge 1 ] ||
	{ echo "bench: --rounds, --repeat, --chunk, --in-flight and -d must be at least 1" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "bench: no .venv: run make setup" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: no /usr/bin/time (apt-get install time)" >&2; exit 1; }

backbone=backbone_adamerging task=fashion tasks=fashion,mnist,digits
. bench/lib/run.sh
bench_run_dir calibrate
# bench_cleanup: the data go even when the logs are kept.
bench_cleanup() { rm -rf "$run_dir/data"; }

echo "bench: building" >&2
go build -tags openblas -o .cache/bench/calibrate ./cmd/calibrate
go build -o .cache/bench/loadgen ./bench/loadgen
calibrate=.cache/bench/calibrate loadgen=.cache/bench/loadgen

echo "bench: writing the data (1× and ${repeat}× the calibration split, .npy and PNG)" >&2
data=$run_dir/data
.venv/bin/python scripts/zoo-png.py --tasks "$tasks" --out "$data/png1" --npy "$data/npy1" >&2
.venv/bin/python scripts/zoo-png.py --tasks "$tasks" --repeat "$repeat" --out "$data/pngK" --npy "$data/npyK" >&2

load=(--load-model="$backbone" --load-model=expert_fashion --load-model=expert_mnist --load-model=expert_digits)
bench_triton --repo tritonmodels/repo -- --model-control-mode=explicit "${load[@]}"
triton=127.0.0.1:$grpc_port

raw=$run_dir/raw.jsonl
: >"$raw"
# fit LABEL INPUTS TASKS: one calibrate fit under /usr/bin/time; appends a
# JSON line with its summary lines, peak RSS and wall time.
fit() {
	local label=$1 inputs=$2 fit_tasks=$3 out=$run_dir/c.safetensors
	local args=(fit --triton "$triton" --inputs "$inputs" --backbone-model "$backbone" --tasks "$fit_tasks"
		--chunk "$chunk" --in-flight "$in_flight" --quiet --out "$out")
	local t
	for t in ${fit_tasks//,/ }; do args+=(--expert "$t=expert_$t"); done
	rm -rf "$out" "$out.ckpt"
	if ! /usr/bin/time -f '%M %e' -o "$run_dir/time.out" "$calibrate" "${args[@]}" >"$run_dir/fit.out" 2>"$run_dir/fit.err"; then
		echo "bench: calibrate fit ($label) failed:" >&2
		tail -n 20 "$run_dir/fit.err" >&2
		exit 1
	fi
	.venv/bin/python - "$label" "$run_dir/fit.out" "$run_dir/time.out" >>"$raw" <<'PY'
import json, re, sys
label, out, tm = sys.argv[1:]
rss_kb, wall = open(tm).read().split()[-2:]
tasks = {}
for line in open(out):
    m = re.match(r"task (\S+): N=(\d+), (\d+) samples in \S+ \(([\d.]+) samples/s\)", line)
    if m:
        tasks[m[1]] = {"n": int(m[2]), "samples_per_s": float(m[4])}
print(json.dumps({"label": label, "tasks": tasks, "max_rss_mb": int(rss_kb) / 1024, "wall_s": float(wall)}))
PY
	echo "bench:   $(tail -n 1 "$raw")" >&2
}

echo "bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "$rounds"); do
	echo "bench: throughput, round $round/$rounds (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
	fit "npy/r$round" "$data/npyK" "$task"
	fit "png/r$round" "$data/pngK" "$task"
	"$loadgen" -addr "$triton" -mode pair -backbone "$backbone" -expert "expert_$task" -feature feature \
		-input image:1,28,28 -batch "$chunk" -concurrency "$in_flight" -duration "${seconds}s" \
		-warmup "${warmup}s" -label "triton/r$round" >>"$raw"
	echo "bench:   $(tail -n 1 "$raw")" >&2
done
echo "bench: peak memory" >&2
fit "mem/npy/1x" "$data/npy1" "$tasks"
fit "mem/npy/${repeat}x" "$data/npyK" "$tasks"
fit "mem/png/1x" "$data/png1" "$tasks"
fit "mem/png/${repeat}x" "$data/pngK" "$tasks"
echo "bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2

results=${results:-$(bench_results_file "bench/results/calibrate-$(date +%F)" md)}
mkdir -p "$(dirname "$results")"
.venv/bin/python - "$raw" "$task" "$repeat" "$chunk" "$in_flight" "$rounds" "$seconds" \
	"$(date -Is)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(go env GOVERSION)" \
	"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY' | tee "$results"
import json, statistics, sys
raw, task, repeat, chunk, in_flight, rounds, seconds, date, nproc, load, gover, commit = sys.argv[1:]
lines = [json.loads(l) for l in open(raw)]
by = {l["label"]: l for l in lines}
R = int(rounds)

def rate(way, r):
    l = by.get(f"{way}/r{r}")
    if l is None:
        return None
    if way == "triton":
        return l["throughput"] if l["requests"] and not l["errors"] else None
    return l["tasks"][task]["samples_per_s"]

print(f"# calibrate fit against Triton alone ({date})\n")
print(f"Task {task} ({1000 * int(repeat)} samples), backbone_adamerging and expert_{task}, "
      f"{chunk} samples per request, {in_flight} in flight, {R} rounds; "
      f"Triton alone: loadgen -mode pair for {seconds} s. {nproc} cores, load average after {load}, "
      f"{gover}, commit {commit}.\n")
print("| way | samples/s (median) | per round | ÷ Triton alone (median of per-round ratios) |")
print("|---|---:|---|---:|")
for way, name in (("triton", "Triton alone (loadgen pair)"), ("npy", "calibrate fit, .npy"), ("png", "calibrate fit, PNG folder")):
    rs = [rate(way, r) for r in range(1, R + 1)]
    ok = [x for x in rs if x is not None]
    ratios = [x / t for x, t in ((rate(way, r), rate("triton", r)) for r in range(1, R + 1)) if x and t]
    med = f"{statistics.median(ok):.0f}" if ok else "—"
    rat = "(baseline)" if way == "triton" else (f"{statistics.median(ratios):.2f}" if ratios else "—")
    print(f"| {name} | {med} | {', '.join('—' if x is None else f'{x:.0f}' for x in rs)} | {rat} |")
print("\nPeak memory of calibrate fit over fashion, mnist and digits:\n")
print("| inputs | samples | max RSS (MB) | wall (s) | samples/s per task |")
print("|---|---:|---:|---:|---|")
for l in lines:
    if l["label"].startswith("mem/"):
        _, kind, k = l["label"].split("/")
        n = sum(t["n"] for t in l["tasks"].values())
        per = ", ".join(f"{t} {v['samples_per_s']:.0f}" for t, v in l["tasks"].items())
        print(f"| {kind} {k} | {n} | {l['max_rss_mb']:.1f} | {l['wall_s']:.1f} | {per} |")
print("\nRaw lines:\n\n```")
for l in lines:
    print(json.dumps(l))
print("```")
PY
echo "bench: report in $results" >&2
done=1
