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
seconds=20 quiet=5 results=
while [ $# -gt 0 ]; do
	case $1 in
	-d | --duration) seconds=$2; shift 2 ;;
	--quiet) quiet=$2; shift 2 ;;
	--out) results=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "abuse-surface: unknown argument $1" >&2; usage ;;
	esac
done
for n in "$seconds" "$quiet"; do
	case $n in '' | *[!0-9]*) echo "abuse-surface: '$n' is not a whole number" >&2; exit 2 ;; esac
done
[ "$seconds" -ge 12 ] || { echo "abuse-surface: -d must be at least 12 (the longest timeout probed is 8 s)" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "abuse-surface: no .venv: run make setup" >&2; exit 1; }

run_dir=$(mkdir -p .cache/bench && mktemp -d "$PWD/.cache/bench/abuse-surface.XXXXXX")
sidecar_pid= done=
finish() {
	if [ -n "$sidecar_pid" ]; then
		kill -TERM "$sidecar_pid" 2>/dev/null || true
		wait "$sidecar_pid" 2>/dev/null || true
	fi
	scripts/triton-down --pid "$run_dir/tritonserver.pid" >/dev/null 2>&1 || true
	if [ -n "$done" ]; then rm -rf "$run_dir"; else echo "abuse-surface: logs kept in $run_dir" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

echo "abuse-surface: building" >&2
make -s build >"$run_dir/build.log" 2>&1 || { cat "$run_dir/build.log" >&2; exit 1; }
go build -o .cache/bench/loadgen ./bench/loadgen
go build -o .cache/bench/abuse ./bench/abuse
go build -o .cache/bench/abuse-surface ./bench/abuse-surface
loadgen=.cache/bench/loadgen abuse=.cache/bench/abuse probe=.cache/bench/abuse-surface

. scripts/lib/ports.sh
for attempt in 1 2 3; do
	read -r grpc_port http_port metrics_port < <(free_ports)
	scripts/triton-up --repo tritonmodels/repo --grpc-port "$grpc_port" --http-port "$http_port" \
		--metrics-port "$metrics_port" --log "$run_dir/tritonserver.log" --pid "$run_dir/tritonserver.pid" \
		--timeout 300 -- --model-control-mode=explicit --load-model=backbone_adamerging \
		--load-model=head_fashion >&2 && break
	[ "$attempt" -lt 3 ] || { echo "abuse-surface: Triton did not start" >&2; exit 1; }
done

read -r sc_grpc sc_http sc_metrics < <(free_ports)
config=$run_dir/sidecar.yaml
cat >"$config" <<EOF
# Written by bench/abuse-surface.sh: the defaults (the management API
# closed), with short timeouts and a small connection cap.
triton:
  grpc: 127.0.0.1:$grpc_port
  http: 127.0.0.1:$http_port
log:
  level: warn
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
bin/sidecar --config "$config" --grpc-listen "127.0.0.1:$sc_grpc" --http-listen "127.0.0.1:$sc_http" \
	--metrics-listen "127.0.0.1:$sc_metrics" --log-level info >>"$run_dir/sidecar.log" 2>&1 &
sidecar_pid=$!
deadline=$((SECONDS + 120))
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$sc_http/v2/health/ready" || true)" = 200 ]; do
	kill -0 "$sidecar_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ] || {
		echo "abuse-surface: the sidecar did not become ready; its log:" >&2
		tail -n 20 "$run_dir/sidecar.log" >&2
		exit 1
	}
	sleep 0.2
done
budget_mib=$(sed -n 's/.*memory_budget="[^"]*total \([0-9]*\) MiB".*/\1/p' "$run_dir/sidecar.log" | tail -n 1)
echo "abuse-surface: sidecar pid $sidecar_pid, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

if [ -z "$results" ]; then
	base=bench/results/abuse-surface-$(date +%F)
	results=$base.jsonl n=2
	while [ -e "$results" ]; do results=$base-$n.jsonl n=$((n + 1)); done
fi
mkdir -p "$(dirname "$results")"
printf '{"run":{"date":"%s","nproc":%d,"cpu":"%s","loadavg":"%s","duration_s":%d,"quiet_s":%d,"budget_mib":%d,"go":"%s","commit":"%s","limits":{"read_header_timeout_s":2,"read_timeout_s":5,"write_timeout_s":5,"idle_timeout_s":8,"max_connections":256}}}\n' \
	"$(date -Is)" "$(nproc)" "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
	"$seconds" "$quiet" "${budget_mib:-0}" "$(go env GOVERSION)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$results"

good_args=(-addr "127.0.0.1:$sc_grpc" -model fashion -input image:1,28,28 -concurrency 1 -duration "$((seconds - 2))s"
	-warmup 2s -metadata react-preference=fashion=0.6,mnist=0.4)
targets=(-grpc "127.0.0.1:$sc_grpc" -http "127.0.0.1:$sc_http" -duration "${seconds}s")

# window NAME PROBE...: one window; each PROBE is the arguments of one run
# of a probe program ("spin ..." runs bench/abuse's), started with the
# well-behaved client.
window() {
	local name=$1 pids=() i=0 p
	shift
	echo "abuse-surface: window $name (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
	"$abuse" watch -pid "$sidecar_pid" -metrics "127.0.0.1:$sc_metrics" -duration "$((seconds + quiet))s" \
		>"$run_dir/watch-$name.jsonl" &
	local watch_pid=$!
	"$loadgen" "${good_args[@]}" -label "good/$name" >"$run_dir/good-$name.json" 2>"$run_dir/good-$name.err" &
	local good_pid=$!
	for p in "$@"; do
		local bin=$probe
		[ "${p%% *}" != spin ] || bin=$abuse
		# shellcheck disable=SC2086 # a probe is a word list
		"$bin" $p >"$run_dir/probe-$name-$i.json" 2>>"$run_dir/probe.err" &
		pids+=($!)
		i=$((i + 1))
	done
	wait "$good_pid" || true
	for p in "${pids[@]}"; do wait "$p" || true; done
	wait "$watch_pid" || true
	{
		printf '{"window":"%s","good":%s,"probes":[' "$name" "$(cat "$run_dir/good-$name.json")"
		local first=1 f
		for f in "$run_dir"/probe-"$name"-*.json; do
			[ -e "$f" ] || continue
			[ -n "$first" ] || printf ','
			first=
			tr -d '\n' <"$f"
		done
		printf '],"samples":['
		paste -sd, "$run_dir/watch-$name.jsonl" | tr -d '\n'
		printf ']}\n'
	} >>"$results"
}

window baseline
window spin "spin -duration ${seconds}s"
window management "management ${targets[*]}"
window slow "slow ${targets[*]} -n 50"
window headers "headers ${targets[*]}"
window conns "conns ${targets[*]} -n 300"

if ! kill -0 "$(cat "$run_dir/tritonserver.pid")" 2>/dev/null; then
	echo "abuse-surface: TRITON IS GONE; last lines of its log:" >&2
	tail -n 15 "$run_dir/tritonserver.log" >&2
fi
kill -0 "$sidecar_pid" 2>/dev/null || { echo "abuse-surface: THE SIDECAR IS GONE" >&2; tail -n 20 "$run_dir/sidecar.log" >&2; }
# Triton's own view: is head_fashion still loaded after the management window?
printf '{"end":{"date":"%s","loadavg":"%s","head_fashion_ready":%s}}\n' "$(date -Is)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
	"$([ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http_port/v2/models/head_fashion/ready")" = 200 ] && echo true || echo false)" >>"$results"
.venv/bin/python bench/abuse_table.py "$results"
echo
.venv/bin/python bench/abuse_surface_table.py "$results"
echo "abuse-surface: raw results in $results" >&2
done=1
