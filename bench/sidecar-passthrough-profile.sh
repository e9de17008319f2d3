#!/usr/bin/env bash
# Where the sidecar's pass-through spends its CPU, against the real Triton.
#
#   bench/sidecar-passthrough-profile.sh [-i http|grpc] [-c CONCURRENCY] [-s SECONDS] [-d] [OUTDIR]
#
# Starts Triton with triton/testdata/repo and the sidecar in front of it as
# bench/sidecar-passthrough.sh does (the same configuration, and pprof
# switched on, on loopback), runs perf_analyzer on affine_fp32 ([1,4] FP32)
# through the sidecar at -c (default 8) over -i (default http), and after 3 s
# of warm-up takes, over the same -s seconds (default 10):
#   cpu.pprof, allocs.pprof  the sidecar's CPU profile and its allocations
#                            (the delta over the window);
#   cpu-top.txt, cpu-cum.txt, allocs-top.txt
#                            their top lists (flat and cumulative; allocs by
#                            count), as text;
#   cpu-share.txt            what each process used of the machine's CPU in
#                            the window (utime + stime from /proc, in ticks
#                            of 1/100 s): the sidecar, Triton (tritonserver
#                            and its Python stubs), perf_analyzer, the rest,
#                            idle; the requests Triton answered in the window
#                            (its nv_inference_request_success metric) and
#                            each process's CPU per request; the sidecar's
#                            read and write system calls and its threads'
#                            context switches per request, and its
#                            connections to Triton's HTTP port at the start
#                            and the end of the window (the same ones:
#                            reused).
# -d sends perf_analyzer to Triton directly instead, the sidecar idle beside
# it: cpu-share.txt only, what Triton and perf_analyzer take per request
# without the sidecar. OUTDIR defaults to .cache/bench/profile. Serialise
# with other Triton runs: flock /work/bench.lock
# bench/sidecar-passthrough-profile.sh. Results: bench/README.md, "seventh
# stop: the HTTP pass-through profiled".
set -euo pipefail
cd "$(dirname "$0")/.."
protocol=http concurrency=8 seconds=10 direct=
while getopts i:c:s:d opt; do
	case $opt in
	i) protocol=$OPTARG ;;
	c) concurrency=$OPTARG ;;
	s) seconds=$OPTARG ;;
	d) direct=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
out=${1:-.cache/bench/profile}
mkdir -p "$out"
out=$(cd "$out" && pwd)

[ -x .venv/bin/perf_analyzer ] || { echo "bench: no .venv/bin/perf_analyzer: run make setup" >&2; exit 1; }
. bench/lib/run.sh
bench_run_dir profile
bench_cleanup() {
	[ -z "${pa_pid:-}" ] || kill "$pa_pid" 2>/dev/null || true
}
bench_triton --repo triton/testdata/repo

make -s build && cp bin/sidecar "$run_dir/sidecar"
read -r sidecar_grpc sidecar_http pprof_port < <(free_ports)
cat >"$run_dir/sidecar.yaml" <<YAML
management:
  allow: [SystemSharedMemoryStatus, SystemSharedMemoryRegister, SystemSharedMemoryUnregister]
pprof:
  enabled: true
  listen: 127.0.0.1:$pprof_port
YAML
bench_sidecar "$sidecar_grpc" "$sidecar_http"
addr=127.0.0.1:$sidecar_http
[ "$protocol" = grpc ] && addr=127.0.0.1:$sidecar_grpc
[ -n "$direct" ] && addr=127.0.0.1:$http_port
[ -n "$direct" ] && [ "$protocol" = grpc ] && addr=127.0.0.1:$grpc_port

# ticks PID...: utime + stime of the processes, in clock ticks.
ticks() {
	local t=0 p
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] || continue
		t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
	done
	echo "$t"
}
# io PID: the read and write system calls the process made (syscr, syscw
# of /proc/PID/io), and its threads' context switches.
io() {
	echo "$(awk '/^sysc[rw]:/{printf "%s ", $2}' "/proc/$1/io")$(cat /proc/"$1"/task/*/status | awk '/ctxt_switches/{n += $2} END{print n}')"
}
# conns PORT: the local ports of the established connections to PORT
# (Triton's), one a line, sorted.
conns() { ss -Htn state established "dst 127.0.0.1:$1" | awk '{n = split($3, a, ":"); print a[n]}' | sort; }
machine() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat; } # busy, idle (+iowait)
answered() {
	curl -s "http://127.0.0.1:$metrics_port/metrics" |
		awk '/^nv_inference_request_success\{.*model="affine_fp32"/{n += $NF} END{print n + 0}'
}

triton_pid=$(cat "$run_dir/tritonserver.pid")
echo "bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $protocol, concurrency $concurrency, $seconds s" >&2
.venv/bin/perf_analyzer -m affine_fp32 -i "$protocol" -u "$addr" --shape INPUT0:1,4 \
	--concurrency-range "$concurrency" --measurement-interval 60000 >"$run_dir/perf_analyzer.log" 2>&1 &
pa_pid=$!
sleep 3
stubs=$(pgrep -P "$triton_pid" | tr '\n' ' ')
# shellcheck disable=SC2086
read -r s0 t0 p0 n0 < <(echo "$(ticks "$sidecar_pid") $(ticks "$triton_pid" $stubs) $(ticks "$pa_pid") $(answered)")
read -r busy0 idle0 < <(machine)
read -r r0 w0 cs0 < <(io "$sidecar_pid")
conns "$http_port" >"$run_dir/conns0"
if [ -n "$direct" ]; then
	sleep "$seconds"
else
	curl -s -o "$out/allocs.pprof" "http://127.0.0.1:$pprof_port/debug/pprof/allocs?seconds=$seconds" &
	alloc_pid=$!
	curl -s -o "$out/cpu.pprof" "http://127.0.0.1:$pprof_port/debug/pprof/profile?seconds=$seconds"
fi
# shellcheck disable=SC2086
read -r s1 t1 p1 n1 < <(echo "$(ticks "$sidecar_pid") $(ticks "$triton_pid" $stubs) $(ticks "$pa_pid") $(answered)")
read -r busy1 idle1 < <(machine)
read -r r1 w1 cs1 < <(io "$sidecar_pid")
conns "$http_port" >"$run_dir/conns1"
kept=$(comm -12 "$run_dir/conns0" "$run_dir/conns1" | wc -l)
[ -n "$direct" ] || wait "$alloc_pid"
kill "$pa_pid" 2>/dev/null || true
wait "$pa_pid" 2>/dev/null || true
pa_pid=

if [ -z "$direct" ]; then
	go tool pprof -top -nodecount=40 "$run_dir/sidecar" "$out/cpu.pprof" >"$out/cpu-top.txt" 2>/dev/null
	go tool pprof -top -cum -nodecount=60 "$run_dir/sidecar" "$out/cpu.pprof" >"$out/cpu-cum.txt" 2>/dev/null
	go tool pprof -top -sample_index=alloc_objects -nodecount=40 "$run_dir/sidecar" "$out/allocs.pprof" >"$out/allocs-top.txt" 2>/dev/null
fi
python3 - "$((s1 - s0))" "$((t1 - t0))" "$((p1 - p0))" "$((busy1 - busy0))" "$((idle1 - idle0))" "$((n1 - n0))" "$seconds" "$(nproc)" \
	"$((r1 - r0))" "$((w1 - w0))" "$((cs1 - cs0))" "$(wc -l <"$run_dir/conns0")" "$(wc -l <"$run_dir/conns1")" "$kept" \
	>"$out/cpu-share.txt" <<'PY'
import sys
side, triton, pa, busy, idle, n, secs, cores, reads, writes, switches, c0, c1, kept = map(int, sys.argv[1:])
total = busy + idle
print(f"window {secs} s, {cores} cores, {total} ticks of CPU (1/100 s); {n} requests answered by Triton ({n / secs:.0f}/s)")
print("| process | ticks | share of the machine | CPU per request (µs) |")
print("|---|---|---|---|")
for name, t in (("sidecar", side), ("Triton (server + Python stubs)", triton), ("perf_analyzer", pa),
                ("the rest", busy - side - triton - pa), ("idle", idle)):
    print(f"| {name} | {t} | {100 * t / total:.0f} % | {t * 1e4 / max(n, 1):.0f} |")
n = max(n, 1)
print(f"\nthe sidecar, per request: {reads / n:.2f} reads and {writes / n:.2f} writes (system calls, /proc/PID/io), "
      f"{switches / n:.2f} context switches of its threads")
print(f"connections to Triton's HTTP port: {c0} at the start of the window, {c1} at its end, {kept} of them the same")
print("(process times and the machine's are counted apart, by the kernel: \"the rest\" can come out a few per cent below 0)")
PY
cat "$out/cpu-share.txt" >&2
[ -n "$direct" ] || head -n 20 "$out/cpu-top.txt" >&2
done=1
