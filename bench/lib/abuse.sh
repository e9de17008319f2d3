# Sourced by bench/abuse.sh and bench/abuse-surface.sh, the two abuse
# suites of issue 22, after bench/lib/run.sh (bench_tag set): what they
# share, from the command line to the record of a window. Each script
# keeps its own usage function (its header's usage lines), Triton's
# models, the sidecar's configuration, good_args (bench/loadgen's
# arguments for the well-behaved client), run_probe and its windows.
#
#   abuse_args MIN_SECONDS WHY "$@"
#
# Parses the suites' command line, -d SECONDS (default 20), --quiet SECONDS
# (default 5), --out FILE, -h, into seconds, quiet and results (default
# empty); -d must be at least MIN_SECONDS (WHY says why, when set). Exits
# 2 on a bad argument, after the script's usage; 1 without .venv.
#
#   abuse_build [PROGRAM...]
#
# After bench_run_dir: builds bin/ (make build), bench/loadgen and
# bench/abuse, and each PROGRAM of bench/ given, into .cache/bench, with
# the build tags of make build (GOTAGS, default openblas: bench/abuse's
# solves link the sidecar's linear algebra); sets loadgen and abuse to the
# first two.
#
#   abuse_config COMMENT
#
# After bench_triton: picks the sidecar's ports (sc_grpc, sc_http,
# sc_metrics) and writes its configuration, config ($run_dir/sidecar.yaml),
# with COMMENT (lines, each written as a comment) and the sections every
# suite has: triton (the run's Triton) and log (level warn). The script
# appends its own sections.
#
#   abuse_start_sidecar [ENV...]
#
# Starts bin/sidecar with $config on 127.0.0.1:$sc_grpc, $sc_http and
# $sc_metrics (log level info, so that the log has the memory budget), in
# the environment ENV (NAME=VALUE...), logging to $run_dir/sidecar.log,
# and waits up to 120 s for it (bench_sidecar_wait); sets sidecar_pid.
# Exits 1, with the log's tail, when it is not ready.
#
#   abuse_results [EXTRA]
#
# Chooses results (bench/results/$bench_tag-DATE.jsonl unless --out) and
# writes its first line: the run (date, machine, load, -d, --quiet, the
# memory budget $budget_mib, Go, the commit), EXTRA added to its members
# (such as ,"limits":{...}).
#
#   window NAME [PROBE...]
#
# One window: the watcher of the sidecar (bench/abuse watch) for -d and
# --quiet seconds, the well-behaved client, and each PROBE (a word list)
# run by the script's run_probe PROBE, all at once; when they are done,
# one line appended to results: the client's result, the probes' and the
# watcher's samples.
#
#   abuse_check_servers
#
# Says on standard error when Triton or the sidecar is gone.

# The script sets bench_tag and good_args; run.sh sets run_dir and the
# ports of Triton.
# shellcheck shell=bash disable=SC2154

abuse_args() {
	local min=$1 why=$2 n
	shift 2
	seconds=20 quiet=5 results=''
	while [ $# -gt 0 ]; do
		case $1 in
		-d | --duration) seconds=$2; shift 2 ;;
		--quiet) quiet=$2; shift 2 ;;
		--out) results=$2; shift 2 ;;
		-h | --help) usage 0 ;;
		*) echo "$bench_tag: unknown argument $1" >&2; usage ;;
		esac
	done
	for n in "$seconds" "$quiet"; do
		case $n in '' | *[!0-9]*) echo "$bench_tag: '$n' is not a whole number" >&2; exit 2 ;; esac
	done
	[ "$seconds" -ge "$min" ] || { echo "$bench_tag: -d must be at least $min${why:+ ($why)}" >&2; exit 2; }
	[ -x .venv/bin/python ] || { echo "$bench_tag: no .venv: run make setup" >&2; exit 1; }
}

# shellcheck disable=SC2120 # the programs are optional
abuse_build() {
	local p
	echo "$bench_tag: building" >&2
	make -s build >"$run_dir/build.log" 2>&1 || { cat "$run_dir/build.log" >&2; exit 1; }
	for p in loadgen abuse "$@"; do
		go build -tags "${GOTAGS:-openblas}" -o ".cache/bench/$p" "./bench/$p"
	done
	loadgen=.cache/bench/loadgen abuse=.cache/bench/abuse
}

abuse_config() {
	read -r sc_grpc sc_http sc_metrics < <(free_ports)
	config=$run_dir/sidecar.yaml
	{
		printf '%s\n' "$1" | sed 's/^/# /'
		cat <<EOF
triton:
  grpc: 127.0.0.1:$grpc_port
  http: 127.0.0.1:$http_port
log:
  level: warn
EOF
	} >"$config"
}

# shellcheck disable=SC2120 # the environment is optional
abuse_start_sidecar() {
	env "$@" bin/sidecar --config "$config" --grpc-listen "127.0.0.1:$sc_grpc" --http-listen "127.0.0.1:$sc_http" \
		--metrics-listen "127.0.0.1:$sc_metrics" --log-level info >>"$run_dir/sidecar.log" 2>&1 &
	sidecar_pid=$!
	bench_sidecar_wait "$sidecar_pid" "127.0.0.1:$sc_http" "$run_dir/sidecar.log" 120 || exit 1
}

# shellcheck disable=SC2120 # EXTRA is optional
abuse_results() {
	results=${results:-$(bench_results_file "bench/results/$bench_tag-$(date +%F)" jsonl)}
	mkdir -p "$(dirname "$results")"
	printf '{"run":{"date":"%s","nproc":%d,"cpu":"%s","loadavg":"%s","duration_s":%d,"quiet_s":%d,"budget_mib":%d,"go":"%s","commit":"%s"%s}}\n' \
		"$(date -Is)" "$(nproc)" "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
		"$seconds" "$quiet" "${budget_mib:-0}" "$(go env GOVERSION)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"${1:-}" >"$results"
}

window() {
	local name=$1 pids=() i=0 p
	shift
	echo "$bench_tag: window $name (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
	"$abuse" watch -pid "$sidecar_pid" -metrics "127.0.0.1:$sc_metrics" -duration "$((seconds + quiet))s" \
		>"$run_dir/watch-$name.jsonl" &
	local watch_pid=$!
	"$loadgen" "${good_args[@]}" -label "good/$name" >"$run_dir/good-$name.json" 2>"$run_dir/good-$name.err" &
	local good_pid=$!
	for p in "$@"; do
		run_probe "$p" >"$run_dir/probe-$name-$i.json" 2>>"$run_dir/probe.err" &
		pids+=($!)
		i=$((i + 1))
	done
	wait "$good_pid" || true
	for p in "${pids[@]}"; do wait "$p" || true; done
	wait "$watch_pid" || true
	{
		printf '{"window":"%s","good":%s,"probes":[' "$name" "$(cat "$run_dir/good-$name.json")"
		local first=1 f
		for f in "$run_dir"/probe-"$name"-[0-9]*.json; do
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

abuse_check_servers() {
	if ! kill -0 "$(cat "$run_dir/tritonserver.pid")" 2>/dev/null; then
		echo "$bench_tag: TRITON IS GONE; last lines of its log:" >&2
		tail -n 15 "$run_dir/tritonserver.log" >&2
	fi
	kill -0 "$sidecar_pid" 2>/dev/null || { echo "$bench_tag: THE SIDECAR IS GONE" >&2; tail -n 20 "$run_dir/sidecar.log" >&2; }
}
