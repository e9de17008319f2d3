# shellcheck shell=bash
# Sourced by the scripts that start a Triton of their own on one of the
# zoos' model repositories (scripts/report.sh, scripts/traffic-row.sh), after
# scripts/lib/ports.sh.
#
#   addrs=$(zoo_triton_up REPO PIDFILE TASKS [MODEL...])
#   grpc=${addrs% *} http=${addrs#* }
#
# Starts a Triton (scripts/triton-up) on REPO on free ports, loading only the
# merged backbones, the experts and the heads of TASKS (comma-separated),
# and the extra MODELs (the tasks' ensembles, say), with its pid in PIDFILE
# and its log beside it (PIDFILE with .log for .pid); stop it with
# scripts/triton-down --pid PIDFILE. Prints "GRPC HTTP" (host:port each) once
# every model is loaded. Ports taken between the check and the bind are
# retried with others, three times in all.
zoo_triton_up() {
	local repo=$1 pidf=$2 tasks=$3 load=() m t attempt grpc_port http_port metrics_port
	shift 3
	for m in backbone_ta backbone_ties backbone_adamerging "$@"; do load+=(--load-model="$m"); done
	for t in ${tasks//,/ }; do load+=(--load-model="expert_$t" --load-model="head_$t"); done
	for attempt in 1 2 3; do
		read -r grpc_port http_port metrics_port < <(free_ports)
		if scripts/triton-up --repo "$repo" --grpc-port "$grpc_port" --http-port "$http_port" \
			--metrics-port "$metrics_port" --pid "$pidf" --log "${pidf%.pid}.log" --timeout 600 \
			-- --model-control-mode=explicit "${load[@]}" >/dev/null; then
			echo "127.0.0.1:$grpc_port 127.0.0.1:$http_port"
			return 0
		fi
		echo "${0##*/}: Triton on $repo did not start (attempt $attempt)" >&2
	done
	return 1
}
