# Sourced by the benchmark scripts that start a Triton (and often a
# sidecar) of their own: the run directory, its clean-up, Triton on free
# ports and the name of a results file. Run from the repository's root.
# bench_tag, the prefix of the messages, is "bench" unless the script sets
# it before sourcing.
#
#   bench_run_dir NAME
#
# Makes run_dir, a new directory .cache/bench/NAME.XXXXXX for the run's
# logs, and traps EXIT to clean up after the run however it ends: the
# sidecar $sidecar_pid (when set) stopped gracefully, the Triton of
# $run_dir/tritonserver.pid stopped, bench_cleanup called (when the script
# defines it), and run_dir removed once the script has set done, kept
# otherwise (a failed run's logs, said on standard error). INT and TERM
# exit 130 through the same clean-up. Sets sidecar_pid= and done=.
#
#   bench_triton TRITON-UP-ARGS...
#
# Starts Triton with scripts/triton-up on three free ports, logging to
# $run_dir/tritonserver.log with its pid in $run_dir/tritonserver.pid,
# retrying twice with other ports (one can be taken before Triton binds
# it); the arguments are triton-up's others (--repo ..., then -- and
# tritonserver's). Sets grpc_port, http_port and metrics_port; exits 1
# when Triton does not start.
#
#   bench_sidecar GRPC-PORT HTTP-PORT
#
# Starts $run_dir/sidecar with $run_dir/sidecar.yaml in front of the
# Triton of bench_triton, listening on 127.0.0.1:GRPC-PORT and
# 127.0.0.1:HTTP-PORT (free ports of the caller's), logging to
# $run_dir/sidecar.log, and waits up to 30 s for it (bench_sidecar_wait).
# Sets sidecar_pid; exits 1 when it is not ready.
#
#   bench_sidecar_wait PID HTTP-ADDR LOG [SECONDS [PATTERN]]
#
# Waits up to SECONDS (default 30) for the sidecar PID, which logs to
# LOG, to answer 200 on http://HTTP-ADDR/v2/health/ready and, when
# PATTERN is given, for LOG to hold a line matching it (grep). Returns 0
# then; otherwise says on standard error whether it exited or was not
# ready in time, with LOG's last 20 lines, and returns 1: the caller
# decides whether to exit, and stops a sidecar still running. For the
# scripts whose sidecars start otherwise (other flags, several at once).
#
#   results=${results:-$(bench_results_file BASE EXT)}
#
# Prints BASE.EXT, or BASE-2.EXT, BASE-3.EXT... when it exists already, so
# that no run overwrites another's results (BASE holds the date, such as
# bench/results/abuse-$(date +%F)).

# shellcheck shell=bash source=scripts/lib/ports.sh
. scripts/lib/ports.sh

: "${bench_tag:=bench}"

bench_run_dir() {
	run_dir=$(mkdir -p .cache/bench && mktemp -d "$PWD/.cache/bench/$1.XXXXXX")
	sidecar_pid='' done=''
	trap bench_finish EXIT
	trap 'exit 130' INT TERM
}

# bench_finish is bench_run_dir's EXIT trap.
bench_finish() {
	if [ -n "$sidecar_pid" ]; then
		kill -TERM "$sidecar_pid" 2>/dev/null || true
		wait "$sidecar_pid" 2>/dev/null || true
	fi
	scripts/triton-down --pid "$run_dir/tritonserver.pid" >/dev/null 2>&1 || true
	! declare -F bench_cleanup >/dev/null || bench_cleanup
	if [ -n "$done" ]; then rm -rf "$run_dir"; else echo "$bench_tag: logs kept in $run_dir" >&2; fi
}

bench_triton() {
	local attempt
	for attempt in 1 2 3; do
		read -r grpc_port http_port metrics_port < <(free_ports)
		scripts/triton-up --grpc-port "$grpc_port" --http-port "$http_port" --metrics-port "$metrics_port" \
			--log "$run_dir/tritonserver.log" --pid "$run_dir/tritonserver.pid" --timeout 300 "$@" >&2 && return 0
		[ "$attempt" -lt 3 ] || { echo "$bench_tag: Triton did not start" >&2; exit 1; }
		echo "$bench_tag: retrying Triton on other ports" >&2
	done
}

bench_sidecar() {
	"$run_dir/sidecar" --config "$run_dir/sidecar.yaml" --triton-grpc "127.0.0.1:$grpc_port" --triton-http "127.0.0.1:$http_port" \
		--grpc-listen "127.0.0.1:$1" --http-listen "127.0.0.1:$2" >"$run_dir/sidecar.log" 2>&1 &
	sidecar_pid=$!
	bench_sidecar_wait "$sidecar_pid" "127.0.0.1:$2" "$run_dir/sidecar.log" || exit 1
}

bench_sidecar_wait() {
	local pid=$1 addr=$2 log=$3 seconds=${4:-30} pattern=${5:-}
	local deadline=$((SECONDS + seconds))
	while [ "$SECONDS" -lt "$deadline" ]; do
		if [ -z "$pattern" ] || grep -q -- "$pattern" "$log"; then
			[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$addr/v2/health/ready" || true)" = 200 ] && return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "$bench_tag: the sidecar (pid $pid) was not ready after $seconds s${pattern:+ (waiting for $pattern in its log)}; last lines of $log:" >&2
	else
		echo "$bench_tag: the sidecar (pid $pid) exited before it was ready; last lines of $log:" >&2
	fi
	tail -n 20 "$log" | sed 's/^/    /' >&2
	return 1
}

bench_results_file() {
	local base=$1 ext=$2 n=2
	local file=$base.$ext
	while [ -e "$file" ]; do file=$base-$n.$ext n=$((n + 1)); done
	echo "$file"
}
