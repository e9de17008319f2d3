#!/usr/bin/env bash
# The sidecar's pass-through overhead, side by side in one run.
#
#   bench/sidecar-passthrough.sh [ROUNDS]      (default 3)
#
# Starts a Triton with triton/testdata/repo and the sidecar in front of it,
# both on free ports, then runs perf_analyzer (.venv/bin/perf_analyzer) on
# affine_fp32 ([1,4] FP32, concurrency 1 and 8, 2 s measurement windows) over
# gRPC, HTTP and gRPC with system shared memory (grpcshm: the tensors in
# shared memory regions, only their registration and the calls through the
# sidecar), against Triton directly and through the sidecar, alternating the
# two in every round so that both see the same machine load. Prints, per
# protocol and concurrency, the median over the rounds of throughput and of
# p50/p99 latency for each path, the ratios sidecar/direct and the p50 the
# sidecar adds (issue 28's targets: ≤ 0.15 ms at concurrency 1, ≥ 0.9× the
# throughput at concurrency 8).
# Results are recorded in bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}

[ -x .venv/bin/perf_analyzer ] || { echo "bench: no .venv/bin/perf_analyzer: run make setup" >&2; exit 1; }
. bench/lib/run.sh
bench_run_dir sidecar
bench_triton --repo triton/testdata/repo

make -s build && cp bin/sidecar "$run_dir/sidecar"
read -r sidecar_grpc sidecar_http _ < <(free_ports)
# perf_analyzer registers its system shared memory regions through the
# sidecar: the management calls it needs are opened, as a user of shared
# memory would open them (docs/sidecar.md, "The front door").
cat >"$run_dir/sidecar.yaml" <<'YAML'
management:
  allow: [SystemSharedMemoryStatus, SystemSharedMemoryRegister, SystemSharedMemoryUnregister]
YAML
bench_sidecar "$sidecar_grpc" "$sidecar_http"

declare -A addr=(
	[grpc-direct]=127.0.0.1:$grpc_port [grpc-sidecar]=127.0.0.1:$sidecar_grpc
	[http-direct]=127.0.0.1:$http_port [http-sidecar]=127.0.0.1:$sidecar_http
)
echo "bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds" >&2
for round in $(seq "$rounds"); do
	for protocol in grpc http grpcshm; do
		for path in direct sidecar; do
			wire=${protocol%shm} shm=()
			[ "$protocol" = grpcshm ] && shm=(--shared-memory system)
			echo "bench: round $round, $protocol, $path (${addr[$wire-$path]})" >&2
			.venv/bin/perf_analyzer -m affine_fp32 -i "$wire" -u "${addr[$wire-$path]}" "${shm[@]}" \
				--shape INPUT0:1,4 --concurrency-range 1:8:7 --measurement-interval 2000 \
				-f "$run_dir/$protocol-$path-$round.csv" >"$run_dir/$protocol-$path-$round.log" 2>&1 ||
				{ tail -n 20 "$run_dir/$protocol-$path-$round.log" >&2; exit 1; }
		done
	done
done
echo "bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2

.venv/bin/python - "$run_dir" <<'PY'
import csv, pathlib, statistics, sys

rows = {}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.csv")):
    protocol, path, _ = f.stem.split("-")
    for r in csv.DictReader(f.open()):
        key = (protocol, int(r["Concurrency"]), path)
        rows.setdefault(key, []).append((float(r["Inferences/Second"]), float(r["p50 latency"]), float(r["p99 latency"])))

def med(key, i):
    return statistics.median(v[i] for v in rows[key])

print("| protocol | concurrency | direct infer/s | sidecar infer/s | ratio | direct p50 / p99 (µs) | sidecar p50 / p99 (µs) | p50 added (µs) |")
print("|---|---|---|---|---|---|---|---|")
for protocol, conc in sorted({(p, c) for p, c, _ in rows}):
    d, s = (protocol, conc, "direct"), (protocol, conc, "sidecar")
    print(f"| {protocol} | {conc} | {med(d, 0):.0f} | {med(s, 0):.0f} | {med(s, 0) / med(d, 0):.2f} "
          f"| {med(d, 1):.0f} / {med(d, 2):.0f} | {med(s, 1):.0f} / {med(s, 2):.0f} | {med(s, 1) - med(d, 1):.0f} |")
print(f"\n(medians over {len(next(iter(rows.values())))} rounds; ratio = sidecar / direct)")
PY
done=1
