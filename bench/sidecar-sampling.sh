#!/usr/bin/env bash
# What live sampling costs the requests it samples from (issue 26), side by
# side in one run.
#
#   bench/sidecar-sampling.sh [ROUNDS]      (default 3)
#
# Starts a Triton with the demo zoo (tritonmodels/repo) and three sidecars
# in front of it, pass-through only, that differ only in sampling: off
# (fraction "0" in the table), fraction 0.01 and fraction 0.1, for the zoo's fashion
# ensemble mapped to task fashion (backbone_adamerging and expert_fashion
# called after the response for each drawn request, max_concurrent 2).
# perf_analyzer (.venv/bin/perf_analyzer) sends one [1,28,28] image of zeros (its random FP32 bytes make NaN features, which sampling refuses as invalid)
# a request over gRPC at concurrency 1 and 4, 2 s windows, to Triton
# directly and to each sidecar, in turn in every round. Prints the medians
# over the rounds of throughput and p50/p99, each sidecar's ratio to the
# fraction-0 sidecar, and the requests each sidecar sampled.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}

[ -x .venv/bin/perf_analyzer ] || { echo "bench: no .venv/bin/perf_analyzer: run make setup" >&2; exit 1; }
. bench/lib/run.sh
bench_run_dir sampling
bench_triton --repo "$PWD/tritonmodels/repo"

make -s build && cp bin/sidecar "$run_dir/sidecar"
declare -A grpc_addr metrics_addr http_addr pids
fractions=(0 0.01 0.1)
for f in "${fractions[@]}"; do
	read -r g h m < <(free_ports)
	mkdir -p "$run_dir/live-$f"
	cat >"$run_dir/sidecar-$f.yaml" <<YAML
triton: {grpc: "127.0.0.1:$grpc_port", http: "127.0.0.1:$http_port", startup_timeout: 120s}
listen: {grpc: "127.0.0.1:$g", http: "127.0.0.1:$h", metrics: "127.0.0.1:$m"}
YAML
	[ "$f" = 0 ] || cat >>"$run_dir/sidecar-$f.yaml" <<YAML
sampling:
  enabled: true
  fraction: $f
  max_concurrent: 2
  replica: bench-$f
  checkpoint: {dir: "$run_dir/live-$f", interval: 1h, window: 24h}
  backbone: {model: backbone_adamerging, output: feature}
  models: [{name: fashion, task: fashion}]
  tasks: [{name: fashion, expert: {model: expert_fashion}}]
YAML
	"$run_dir/sidecar" --config "$run_dir/sidecar-$f.yaml" >"$run_dir/sidecar-$f.log" 2>&1 &
	pids[$f]=$!
	grpc_addr[$f]=127.0.0.1:$g metrics_addr[$f]=127.0.0.1:$m http_addr[$f]=127.0.0.1:$h
done
bench_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
for f in "${fractions[@]}"; do
	want='msg="sampling on"'
	[ "$f" != 0 ] || want='msg="sidecar listening"'
	bench_sidecar_wait "${pids[$f]}" "${http_addr[$f]}" "$run_dir/sidecar-$f.log" 120 "$want" || exit 1
done

echo "bench: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds" >&2
for round in $(seq "$rounds"); do
	for path in direct "${fractions[@]}"; do
		addr=127.0.0.1:$grpc_port
		[ "$path" = direct ] || addr=${grpc_addr[$path]}
		echo "bench: round $round, $path ($addr)" >&2
		.venv/bin/perf_analyzer -m fashion -i grpc -u "$addr" --shape image:1,28,28 --input-data zero \
			--concurrency-range 1:4:3 --measurement-interval 2000 \
			-f "$run_dir/$path-$round.csv" >"$run_dir/$path-$round.log" 2>&1 ||
			{ tail -n 20 "$run_dir/$path-$round.log" >&2; exit 1; }
	done
done
echo "bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for f in "${fractions[@]}"; do
	curl -s "http://${metrics_addr[$f]}/metrics" | grep '^react_sampling_' >"$run_dir/metrics-$f.txt" || true
	n=$(awk '/^react_sampling_requests_total\{/ {s += $2} END {print s + 0}' "$run_dir/metrics-$f.txt")
	echo "samples $f $n"
done >"$run_dir/samples.txt"
cat "$run_dir"/metrics-*.txt >&2

.venv/bin/python - "$run_dir" <<'PY'
import csv, pathlib, statistics, sys

run = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(run.glob("*.csv")):
    path, _ = f.stem.rsplit("-", 1)
    for r in csv.DictReader(f.open()):
        rows.setdefault((int(r["Concurrency"]), path), []).append(
            (float(r["Inferences/Second"]), float(r["p50 latency"]), float(r["p99 latency"])))
samples = dict(line.split()[1:] for line in (run / "samples.txt").read_text().splitlines())

def med(key, i):
    return statistics.median(v[i] for v in rows[key])

print("| concurrency | path | infer/s | p50 / p99 (µs) | infer/s ÷ off | p50 ÷ off | requests sampled |")
print("|---:|---|---:|---|---:|---:|---:|")
for conc in sorted({c for c, _ in rows}):
    base = (conc, "0")
    for path in ["direct", "0", "0.01", "0.1"]:
        k = (conc, path)
        name = "Triton direct" if path == "direct" else ("sidecar, sampling off" if path == "0" else f"sidecar, fraction {path}")
        ratio = "" if path == "direct" else f"{med(k, 0) / med(base, 0):.2f}"
        p50 = "" if path == "direct" else f"{med(k, 1) / med(base, 1):.2f}"
        print(f"| {conc} | {name} | {med(k, 0):.0f} | {med(k, 1):.0f} / {med(k, 2):.0f} | {ratio} | {p50} | {'' if path == 'direct' else samples.get(path, '?')} |")
print(f"\n(medians over {len(next(iter(rows.values())))} rounds)")
PY
done=1
