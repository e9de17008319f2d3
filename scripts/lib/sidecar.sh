# Sourced by the scripts that run the sidecar in front of a Triton
# (scripts/serve, scripts/test.sh, scripts/demo.sh).
#
#   start_sidecar CONFIG TRITON_GRPC TRITON_HTTP LOG [GRPC_PORT HTTP_PORT METRICS_PORT]
#
# Starts bin/sidecar (or $SIDECAR_BIN) with CONFIG in front of the Triton at
# TRITON_GRPC/TRITON_HTTP (host:port, passed as REACT_TRITON_GRPC and
# REACT_TRITON_HTTP, which override the file's), listening on 127.0.0.1 at
# the given ports (free ports otherwise), logging to LOG. It waits until the
# sidecar's /v2/health/ready answers 200: Triton is ready and the
# controllable models are built. On success it sets sidecar_pid,
# sidecar_grpc, sidecar_http and sidecar_metrics (host:port) and returns 0;
# otherwise it prints the log's tail, stops the sidecar and returns 1. Ports
# taken between the check and the bind are retried with others, unless they
# were given.
start_sidecar() {
	local config=$1 tgrpc=$2 thttp=$3 log=$4 gport=${5:-} hport=${6:-} mport=${7:-}
	local bin=${SIDECAR_BIN:-bin/sidecar} attempt g h m
	for attempt in 1 2 3; do
		read -r g h m < <(free_ports)
		g=${gport:-$g} h=${hport:-$h} m=${mport:-$m}
		REACT_TRITON_GRPC=$tgrpc REACT_TRITON_HTTP=$thttp "$bin" --config "$config" \
			--grpc-listen "127.0.0.1:$g" --http-listen "127.0.0.1:$h" --metrics-listen "127.0.0.1:$m" \
			</dev/null >>"$log" 2>&1 &
		sidecar_pid=$!
		for _ in $(seq 1200); do
			kill -0 "$sidecar_pid" 2>/dev/null || break
			if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$h/v2/health/ready" || true)" = 200 ]; then
				sidecar_grpc=127.0.0.1:$g sidecar_http=127.0.0.1:$h sidecar_metrics=127.0.0.1:$m
				return 0
			fi
			sleep 0.1
		done
		kill -TERM "$sidecar_pid" 2>/dev/null || true
		wait "$sidecar_pid" 2>/dev/null || true
		sidecar_pid=
		echo "the sidecar did not become ready (attempt $attempt); last lines of $log:" >&2
		tail -n 20 "$log" >&2
		[ -z "$gport$hport$mport" ] || return 1
	done
	return 1
}

# stop_sidecar stops the sidecar start_sidecar started, gracefully.
stop_sidecar() {
	if [ -n "${sidecar_pid:-}" ] && kill -0 "$sidecar_pid" 2>/dev/null; then
		kill -TERM "$sidecar_pid" 2>/dev/null || true
		wait "$sidecar_pid" 2>/dev/null || true
	fi
	sidecar_pid=
}
