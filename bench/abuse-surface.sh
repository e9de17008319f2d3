#!/usr/bin/env bash
# The abuse suite of issue 22's front door (items 4 to 10): the probes of
# bench/abuse-surface/ against the real Triton and the sidecar, on
# loopback, each in a window of its own, side by side with a baseline
# window, while a well-behaved client keeps calling. The companion of
# bench/abuse.sh (items 1 to 3), in the same format: its table script reads
# both.
#
#   bench/abuse-surface.sh [-d SECONDS] [--quiet SECONDS] [--out FILE]
#
# Triton (tritonmodels' python backend, explicit model control, as
# scripts/serve runs it) serves the zoo's backbone_adamerging and
# head_fashion; the sidecar serves the controllable model "fashion" over
# the zoo's components file, with the default management section (closed)
# and these server limits, short so that the probes see them act within a
# window: read_header_timeout 2s, read_timeout 5s, write_timeout 5s,
# idle_timeout 8s, max_connections 256.
#
# Windows (-d seconds each, default 20), in order:
#   baseline    the well-behaved client alone;
#   spin        a process keeping one core busy at nice 19, no sidecar
#               involved: what any background work costs the client here;
#   management  every call of Triton's management API, both protocols, HTTP
#               in several spellings, in a loop: each an unload (or load) of
#               "fashion"'s own head, so that one let through would fail the
#               client too;
#   slow        50 connections of each kind, never finishing: idle TCP,
#               headers a byte a second, a body a byte a second, an idle
#               kept-alive connection, a gRPC call with no request, an idle
#               gRPC connection; with when the sidecar closed each;
#   headers     requests with 2 to 40 KB of cookie (HTTP header, gRPC
#               metadata), to "fashion" and passed through;
#   conns       300 connections to each listener, held (reopened when
#               closed), over the cap of 256.
# The well-behaved client is bench/loadgen at concurrency 1 on "fashion"
# over gRPC with a fixed preference (cached after its warm-up). After each
# window the suite waits --quiet seconds (default 5) with no traffic.
#
# Recorded per window: the client's requests, failures, p50 and p99; the
# probes' answers; the sidecar's CPU seconds and peak RSS. Every sample goes
# to --out (default bench/results/abuse-surface-DATE.jsonl); the tables go
# to standard output. Targets (issue 22): 0 management calls succeed with
# the default configuration; idle and slow connections closed at the
# configured timeouts; the client's p99 within 2x the baseline's and no
# failed request in every window.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
bench_tag='abuse-surface'
. bench/lib/run.sh
. bench/lib/abuse.sh
abuse_args 12 "the longest timeout probed is 8 s" "$@"
bench_run_dir abuse-surface
abuse_build abuse-surface
probe=.cache/bench/abuse-surface

bench_triton --repo tritonmodels/repo -- --model-control-mode=explicit --load-model=backbone_adamerging \
	--load-model=head_fashion

abuse_config "Written by bench/abuse-surface.sh: the defaults (the management API
closed), with short timeouts and a small connection cap."
cat >>"$config" <<EOF
server:
  max_connections: 256
  read_header_timeout: 2s
  read_timeout: 5s
  write_timeout: 5s
  idle_timeout: 8s
components:
  - name: zoo
    path: $PWD/tritonmodels/zoo/components.safetensors
models:
  - name: fashion
    backbone: {model: backbone_adamerging, output: feature}
    heads:
      - {task: fashion, model: head_fashion}
EOF
abuse_start_sidecar
budget_mib=$(sed -n 's/.*memory_budget="[^"]*total \([0-9]*\) MiB".*/\1/p' "$run_dir/sidecar.log" | tail -n 1)
echo "abuse-surface: sidecar pid $sidecar_pid, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

abuse_results ',"limits":{"read_header_timeout_s":2,"read_timeout_s":5,"write_timeout_s":5,"idle_timeout_s":8,"max_connections":256}'

good_args=(-addr "127.0.0.1:$sc_grpc" -model fashion -input image:1,28,28 -concurrency 1 -duration "$((seconds - 2))s"
	-warmup 2s -metadata react-preference=fashion=0.6,mnist=0.4)
targets=(-grpc "127.0.0.1:$sc_grpc" -http "127.0.0.1:$sc_http" -duration "${seconds}s")

# run_probe PROBE: one run of a probe program with the arguments PROBE,
# for the window ("spin ..." runs bench/abuse's, the others
# bench/abuse-surface's).
run_probe() {
	local bin=$probe
	[ "${1%% *}" != spin ] || bin=$abuse
	# shellcheck disable=SC2086 # a probe is a word list
	"$bin" $1
}

window baseline
window spin "spin -duration ${seconds}s"
window management "management ${targets[*]}"
window slow "slow ${targets[*]} -n 50"
window headers "headers ${targets[*]}"
window conns "conns ${targets[*]} -n 300"

abuse_check_servers
# Triton's own view: is head_fashion still loaded after the management window?
printf '{"end":{"date":"%s","loadavg":"%s","head_fashion_ready":%s}}\n' "$(date -Is)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
	"$([ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http_port/v2/models/head_fashion/ready")" = 200 ] && echo true || echo false)" >>"$results"
.venv/bin/python bench/abuse_table.py "$results"
echo
.venv/bin/python bench/abuse_surface_table.py "$results"
echo "abuse-surface: raw results in $results" >&2
done=1
