#!/usr/bin/env bash
# The sidecar's controllable path and the react backend's ensemble step
# against the same work done without them.
#
#   bench/sidecar-controllable.sh [--pair fashion|synth|effnet|all] [--rounds N] [-d SECONDS]
#       [--warmup SECONDS] [--concurrency "1 8 32"] [--ways "sidecar graph ..."]
#       [--skip-sidecar] [--pprof FILE] [--perf DIR] [--blas-threads N] [--out FILE]
#
# For two backbone/head pairs, fashion (the zoo: backbone_adamerging ->
# head_fashion, ensemble fashion, image [1,28,28], D=64) and synth
# (bench/models: synth_backbone -> synth_head, ensemble synth, x [768],
# D=768), or effnet alone (the second zoo, tritonmodels/repo-effnet: the same
# model names as fashion, EfficientNet-Lite0, D=1280; its components file is
# built by make zoo ZOO=effnet or tests/test_zoo_effnet.py), it measures
# seven ways of getting the head's answer for an input, with the closed-loop
# load generator bench/loadgen over gRPC:
#   sidecar   the sidecar's controllable model in the explicit form
#             (explicit_<ensemble>: backbone, W_p correction, head), with a
#             two-task preference in the gRPC metadata react-preference;
#   graph     the sidecar's controllable model in the graph form (named like
#             the ensemble, which it shadows: the ensemble's steps run by
#             the sidecar, W_p applied to the ensemble's feature tensor),
#             with the same preference;
#   twocall   a client calling the backbone, then the head with the
#             backbone's feature bytes, on Triton directly (the same work
#             without the correction);
#   ensemble  the Triton ensemble (backbone -> head inside Triton);
#   react     the ensemble with the react backend's step between backbone and
#             head (fashion_react, synth_react: backbone -> react -> head
#             inside Triton), with the same preference as a request
#             parameter: backend mode;
#   pystep    the peer of react, what a Triton user writes without this
#             product: the same ensemble with a Python-backend step that
#             multiplies the feature by W_p with numpy in place of the react
#             step (fashion_pystep, synth_pystep: backbone -> pystep_* ->
#             head; bench/models/numpy_peer.py), same preference parameter;
#   pybls     the other peer: one Python model that calls the backbone and
#             the head itself with BLS (pb_utils.InferenceRequest(...).exec())
#             and corrects with numpy in between (fashion_pybls,
#             synth_pybls), same preference parameter.
# and two more, synth only and not in the default --ways, that take the
# react step apart:
#   reactnone the react ensemble with react-preference=none: the react step
#             without its correction (its input copied to its output);
#   identity  the ensemble with the thinnest step in place of react's
#             (synth_identity: synth_backbone -> identity_synth -> synth_head,
#             a C backend that copies its input, bench/identity/identity.c,
#             built here with cc): what one more ensemble step costs in
#             Triton itself, the floor under any backend's step.
# The peers do not solve W_p: the W_p of the benchmark's preference is
# written by `calibrate solve` into .cache/bench/<pair>/wp/ before Triton
# starts and loaded at initialize. Before measuring them, bench/peer_check.py
# checks on the running Triton that the react step's and the numpy step's
# corrected features are within float32's error bound of a float64
# W_p z, and that the react, numpy-step and BLS pipelines give the head's
# answer for it; a pair that fails does not measure its peers. The peers
# exist for fashion and synth, not effnet.
# For each concurrency (default 1, 8 and 32) it runs --rounds rounds (default
# 3); each round runs every pair's ways (--ways, default all seven) in turn, -d seconds each
# (default 10) after --warmup seconds (default 2), so that all see the same
# machine load. It prints a markdown table of the medians over the rounds and,
# against two-call, the added p50/p99 latency and the throughput ratio
# (medians of the per-round differences and ratios), then the graph form
# against the explicit form, then the react step against the plain ensemble
# and against the sidecar, then the react step against the Python peers
# (the step's added p50 over the plain ensemble against the numpy step's;
# the target of issue 28 is at most a third). Every loadgen line goes to
# --out, by default bench/results/sidecar-controllable-DATE.jsonl (with
# -skip-sidecar in the name for --skip-sidecar, and -2, -3... rather than
# overwrite a file).
#
# It builds bin/sidecar, bin/calibrate and .cache/bench/loadgen, starts one
# Triton (tritonmodels/repo and bench/models, only the models used) and the
# sidecar on free ports, and stops both on any exit. The synthetic components
# file (D=768, tasks t0..t7) is made by bench/synth-components.py and
# `calibrate fit`, and reused while neither changes. The zoo's is
# tritonmodels/zoo/components.safetensors. The react way needs the backend
# (make build) and, for synth, the synthetic components file.
#
# A sidecar that does not build or start, or whose calls fail, is reported
# and the other ways still run; --skip-sidecar runs only those. The sidecar
# is started only when --ways has sidecar or graph.
# --pprof FILE saves a CPU profile of the sidecar (pprof enabled on a
# listener of its own, /debug/pprof/profile) taken during the first
# concurrency-32 round of synth.
# --perf DIR profiles the whole machine with Linux perf (cpu-clock, 2,000
# Hz, call graphs) while each way runs in the first round of each
# concurrency, after the warmup, for -d seconds, and writes per way and
# concurrency DIR/PAIR-WAY-cC-split.md (bench/perf_split.py: the CPU per
# request by process, Triton's by library, and the react instance thread's
# by what it does), DIR/PAIR-WAY-cC-comm.txt (perf report by process and
# library) and DIR/PAIR-WAY-cC-triton.txt (Triton's own functions, self
# time); the perf.data files stay in DIR/data. The profiled round carries
# perf's own cost (a few percent of the two cores): measure without it.
# It needs perf (linux-perf) and the right to profile every CPU (root, or
# kernel.perf_event_paranoid ≤ 0).
# --blas-threads N starts Triton with OPENBLAS_NUM_THREADS=N, which its
# Python backend stubs inherit: the numpy of the synthetic backbone and head
# and of the numpy step then uses N threads (by default as many as the
# machine has cores, whose idle workers wait for work spinning on
# sched_yield; --perf shows it). The react backend sets its own
# (linalg-threads, default 1) either way.
# Every run also records each model's statistics over it, read from Triton
# before and after (per request: queue, compute input, infer, output, and
# requests per execution), as the "models" field of its results line; the
# summary shows them for the ensemble, react and pystep ways.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
pair=all rounds=3 seconds=10 warmup=2 concurrencies="1 8 32" ways="sidecar graph twocall ensemble react pystep pybls" skip_sidecar= pprof= perf_dir='' blas_threads='' results=
while [ $# -gt 0 ]; do
	case $1 in
	--pair) pair=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	-d | --duration) seconds=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--concurrency) concurrencies=$2; shift 2 ;;
	--ways) ways=$2; shift 2 ;;
	--skip-sidecar) skip_sidecar=1; shift ;;
	--pprof) pprof=$2; shift 2 ;;
	--perf) perf_dir=$2; shift 2 ;;
	--blas-threads) blas_threads=$2; shift 2 ;;
	--out) results=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "bench: unknown argument $1" >&2; usage ;;
	esac
done
case $pair in
all) pairs=(fashion synth) ;;
fashion | synth | effnet) pairs=("$pair") ;;
*) echo "bench: --pair $pair: want fashion, synth, effnet or all" >&2; exit 2 ;;
esac
for n in "$rounds" "$seconds" "$warmup" $concurrencies $blas_threads; do
	case $n in '' | *[!0-9]*) echo "bench: '$n' is not a whole number" >&2; exit 2 ;; esac
done
[ "$rounds" -ge 1 ] && [ "$seconds" -ge 1 ] || { echo "bench: --rounds and -d must be at least 1" >&2; exit 2; }
[ -n "$concurrencies" ] || { echo "bench: --concurrency is empty" >&2; exit 2; }
for w in $ways; do
	case $w in sidecar | graph | twocall | ensemble | react | pystep | pybls | reactnone | identity) ;; *) echo "bench: --ways: unknown way $w" >&2; exit 2 ;; esac
done
[ -n "$ways" ] || { echo "bench: --ways is empty" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "bench: no .venv: run make setup" >&2; exit 1; }
if [ -n "$perf_dir" ]; then
	command -v perf >/dev/null || { echo "bench: --perf: no perf on PATH (Debian: linux-perf)" >&2; exit 1; }
	perf record -q -a -e cpu-clock -o /dev/null -- true 2>/dev/null ||
		{ echo "bench: --perf: perf cannot profile every CPU here (run as root, or lower kernel.perf_event_paranoid)" >&2; exit 1; }
	mkdir -p "$perf_dir/data"
fi

# The pairs: input, backbone, feature output, head, task, ensemble (also the
# sidecar's model name), preference sent to the sidecar, components file.
declare -A input=([fashion]=image:1,28,28 [synth]=x:768 [effnet]=image:1,28,28)
declare -A backbone=([fashion]=backbone_adamerging [synth]=synth_backbone [effnet]=backbone_adamerging)
declare -A head=([fashion]=head_fashion [synth]=synth_head [effnet]=head_fashion)
declare -A task=([fashion]=fashion [synth]=t0 [effnet]=fashion)
declare -A ensemble=([fashion]=fashion [synth]=synth [effnet]=fashion)
declare -A react_ensemble=([fashion]=fashion_react [synth]=synth_react [effnet]=fashion_react)
declare -A react_model=([fashion]=react_adamerging [synth]=react_synth [effnet]=react_adamerging)
# The Python peers of the react step (bench/models; none for effnet).
declare -A pystep_ensemble=([fashion]=fashion_pystep [synth]=synth_pystep)
declare -A pystep_model=([fashion]=pystep_adamerging [synth]=pystep_synth)
declare -A pybls_model=([fashion]=fashion_pybls [synth]=synth_pybls)
# The identity step (bench/models; synth only).
declare -A identity_ensemble=([synth]=synth_identity)
declare -A identity_model=([synth]=identity_synth)
declare -A preference=([fashion]=fashion=0.6,mnist=0.4 [synth]=t0=0.6,t1=0.4 [effnet]=fashion=0.6,mnist=0.4)
declare -A components=([fashion]=$PWD/tritonmodels/zoo/components.safetensors [synth]=$PWD/.cache/bench/synth/components.safetensors
	[effnet]=$PWD/tritonmodels/zoo-effnet/components.safetensors)
# The zoo repository the pairs need (effnet's models share fashion's names).
zoo_repo=tritonmodels/repo
[ "${pairs[*]}" != effnet ] || zoo_repo=tritonmodels/repo-effnet
feature=feature

. bench/lib/run.sh
. bench/lib/synth.sh
bench_run_dir controllable

# sidecar_ok[PAIR]=1 while the sidecar way of PAIR can run; why_not[PAIR]
# says why not otherwise.
declare -A sidecar_ok=() why_not=()
has_way() { case " $ways " in *" $1 "*) return 0 ;; esac; return 1; }
no_sidecar() { # no_sidecar REASON [PAIR...]: the sidecar way of PAIR (default all) will not run
	local reason=$1 p
	shift
	[ $# -gt 0 ] || set -- "${pairs[@]}"
	echo "bench: SIDECAR NOT RUN ($*): $reason" >&2
	for p in "$@"; do
		sidecar_ok[$p]=0
		why_not[$p]=$reason
	done
}
for p in "${pairs[@]}"; do
	if [ -n "$skip_sidecar" ]; then
		sidecar_ok[$p]=0
		why_not[$p]=--skip-sidecar
	elif ! has_way sidecar && ! has_way graph; then
		# Not started at all.
		sidecar_ok[$p]=0
		why_not[$p]="not in --ways"
	else
		sidecar_ok[$p]=1
	fi
done
any_sidecar() { local p; for p in "${pairs[@]}"; do [ "${sidecar_ok[$p]}" = 1 ] && return 0; done; return 1; }

# peer_ok[PAIR]=1 while the Python peers (pystep, pybls) of PAIR can run;
# why_peer[PAIR] says why not otherwise.
declare -A peer_ok=() why_peer=()
no_peers() { # no_peers REASON PAIR...: the pystep and pybls ways of PAIR will not run
	local reason=$1 p
	shift
	for p in "$@"; do
		[ "${peer_ok[$p]}" = 1 ] || continue
		echo "bench: PYTHON PEERS NOT RUN ($p): $reason" >&2
		peer_ok[$p]=0
		why_peer[$p]=$reason
	done
}
for p in "${pairs[@]}"; do
	peer_ok[$p]=0
	if ! has_way pystep && ! has_way pybls; then
		why_peer[$p]="not in --ways"
	elif [ -z "${pystep_model[$p]-}" ]; then
		why_peer[$p]="no Python peer models for $p"
		echo "bench: PYTHON PEERS NOT RUN ($p): ${why_peer[$p]}" >&2
	else
		peer_ok[$p]=1
	fi
done

echo "bench: building" >&2
go build -o .cache/bench/loadgen ./bench/loadgen
loadgen=.cache/bench/loadgen
# make build makes the sidecar, calibrate and the react backend.
react_ok=1
if ! make -s build >"$run_dir/build.log" 2>&1; then
	cat "$run_dir/build.log" >&2
	no_sidecar "bin/sidecar or bin/calibrate does not build"
	no_peers "bin/calibrate does not build" "${pairs[@]}"
	react_ok=0
fi

# The identity backend, for the identity way.
identity_ok=0
if has_way identity; then
	mkdir -p .cache/bench/identity
	if cc -O2 -Wall -shared -fPIC -Ibackend -o .cache/bench/identity/libtriton_identity.so bench/identity/identity.c \
		>"$run_dir/identity.log" 2>&1; then
		identity_ok=1
	else
		cat "$run_dir/identity.log" >&2
		echo "bench: IDENTITY NOT RUN: bench/identity/identity.c does not build" >&2
	fi
fi

# The components files the sidecar needs.
for p in fashion effnet; do
	if [ "${sidecar_ok[$p]-0}" = 1 ] && [ ! -f "${components[$p]}" ]; then
		no_sidecar "no zoo components file ${components[$p]}" "$p"
	fi
done
synth_ok=0
case " ${pairs[*]} " in *" synth "*) [ "$react_ok" = 1 ] && synth_ok=1 ;; esac
[ "${sidecar_ok[synth]-0}" = 1 ] && synth_ok=1
if [ "$synth_ok" = 1 ] && ! bench_synth_components "${components[synth]}"; then
	no_sidecar "the synthetic components could not be made" synth
	no_peers "the synthetic components could not be made" synth
	synth_ok=0
fi

# The Python peers' W_p, precomputed as their users would: calibrate solve
# for the benchmark's preference, into the directory their config.pbtxt
# names (.cache/bench/<pair>/wp/SPEC.npy), remade on every run.
for p in "${pairs[@]}"; do
	[ "${peer_ok[$p]}" = 1 ] || continue
	if [ ! -f "${components[$p]}" ]; then
		no_peers "no components file ${components[$p]}" "$p"
		continue
	fi
	wp_dir=.cache/bench/$p/wp
	rm -rf "$wp_dir" && mkdir -p "$wp_dir"
	if ! bin/calibrate solve --components "${components[$p]}" --preference "${preference[$p]}" \
		--out "$wp_dir/${preference[$p]}.npy" >"$run_dir/solve-$p.log" 2>&1; then
		tail -n 5 "$run_dir/solve-$p.log" >&2
		no_peers "calibrate solve failed" "$p"
	fi
done

# One Triton with the models used (explicit loading: only those).
load=()
for p in "${pairs[@]}"; do
	load+=(--load-model="${backbone[$p]}" --load-model="${head[$p]}" --load-model="${ensemble[$p]}")
	if [ "$react_ok" = 1 ] && { [ "$p" != synth ] || [ "$synth_ok" = 1 ]; }; then
		load+=(--load-model="${react_model[$p]}" --load-model="${react_ensemble[$p]}")
	fi
	if [ "$identity_ok" = 1 ] && [ -n "${identity_model[$p]-}" ]; then
		load+=(--load-model="${identity_model[$p]}" --load-model="${identity_ensemble[$p]}")
	fi
	if [ "${peer_ok[$p]}" = 1 ]; then
		! has_way pystep || load+=(--load-model="${pystep_model[$p]}" --load-model="${pystep_ensemble[$p]}")
		! has_way pybls || load+=(--load-model="${pybls_model[$p]}")
	fi
done
more=()
[ "$identity_ok" != 1 ] || more+=(--backend "identity=$PWD/.cache/bench/identity")
if [ -n "$blas_threads" ]; then
	OPENBLAS_NUM_THREADS=$blas_threads bench_triton --repo "$zoo_repo" --repo bench/models ${more[@]+"${more[@]}"} -- \
		--model-control-mode=explicit "${load[@]}"
else
	bench_triton --repo "$zoo_repo" --repo bench/models ${more[@]+"${more[@]}"} -- --model-control-mode=explicit "${load[@]}"
fi
triton=127.0.0.1:$grpc_port

# The peers checked against the react step and a float64 W_p z, once
# (bench/peer_check.py); the result goes into the results file below.
peer_checks=()
for p in "${pairs[@]}"; do
	[ "${peer_ok[$p]}" = 1 ] || continue
	check=(--triton "$triton" --input "${input[$p]}" --backbone "${backbone[$p]}" --head "${head[$p]}"
		--ensemble "${ensemble[$p]}" --preference "${preference[$p]}" --wp ".cache/bench/$p/wp/${preference[$p]}.npy")
	if [ "$react_ok" = 1 ]; then
		check+=(--react-model "${react_model[$p]}" --react-ensemble "${react_ensemble[$p]}")
	fi
	! has_way pystep || check+=(--pystep-model "${pystep_model[$p]}" --pystep-ensemble "${pystep_ensemble[$p]}")
	! has_way pybls || check+=(--pybls "${pybls_model[$p]}")
	if .venv/bin/python bench/peer_check.py "${check[@]}" >"$run_dir/peer-check-$p.log" 2>&1; then
		peer_checks+=("$p:ok")
	else
		peer_checks+=("$p:failed")
		no_peers "the numerical check failed (bench/peer_check.py; log below)" "$p"
	fi
	sed 's/^/bench:   /' "$run_dir/peer-check-$p.log" >&2
done

# The sidecar, configured with the controllable models whose way can run.
if any_sidecar; then
	read -r sc_grpc sc_http sc_metrics < <(free_ports)
	sc_pprof=
	[ -z "$pprof" ] || read -r sc_pprof _ _ < <(free_ports)
	config=$run_dir/sidecar.yaml
	{
		echo "# Written by bench/sidecar-controllable.sh."
		echo "triton:"
		echo "  grpc: $triton"
		echo "  http: 127.0.0.1:$http_port"
		echo "log:"
		echo "  level: warn"
		if [ -n "$pprof" ]; then
			# Go's profiles, off by default, on a listener of their own.
			echo "pprof:"
			echo "  enabled: true"
			echo "  listen: 127.0.0.1:$sc_pprof"
			echo "  max_seconds: 120"
		fi
		echo "components:"
		for p in "${pairs[@]}"; do
			[ "${sidecar_ok[$p]}" = 1 ] || continue
			echo "  - name: $p"
			echo "    path: ${components[$p]}"
		done
		echo "models:"
		for p in "${pairs[@]}"; do
			[ "${sidecar_ok[$p]}" = 1 ] || continue
			# The explicit form, under a name of its own.
			echo "  - name: explicit_${ensemble[$p]}"
			echo "    components: $p"
			echo "    backbone: { model: ${backbone[$p]}, output: $feature }"
			echo "    heads:"
			echo "      - { task: ${task[$p]}, model: ${head[$p]} }"
			# The graph form: the ensemble's own steps, its tensor corrected.
			echo "  - { name: ${ensemble[$p]}, components: $p, correct: $feature }"
		done
	} >"$config"
	bin/sidecar --config "$config" --grpc-listen "127.0.0.1:$sc_grpc" --http-listen "127.0.0.1:$sc_http" \
		--metrics-listen "127.0.0.1:$sc_metrics" >"$run_dir/sidecar.log" 2>&1 &
	sidecar_pid=$!
	# Not ready: the rows of the sidecar's ways are left out, said why.
	if ! bench_sidecar_wait "$sidecar_pid" "127.0.0.1:$sc_http" "$run_dir/sidecar.log" 120; then
		if kill -0 "$sidecar_pid" 2>/dev/null; then
			kill -TERM "$sidecar_pid" 2>/dev/null || true
			why="not ready after 120 s"
		else
			why="exited before it was ready"
		fi
		wait "$sidecar_pid" 2>/dev/null && rc=0 || rc=$?
		sidecar_pid=
		echo "bench: the sidecar $why (status $rc); config $config" >&2
		running=()
		for p in "${pairs[@]}"; do [ "${sidecar_ok[$p]}" = 0 ] || running+=("$p"); done
		no_sidecar "the sidecar $why (status $rc)" "${running[@]}"
	else
		echo "bench: sidecar ready: grpc 127.0.0.1:$sc_grpc, metrics 127.0.0.1:$sc_metrics" >&2
	fi
fi

results=${results:-$(bench_results_file "bench/results/sidecar-controllable-$(date +%F)${skip_sidecar:+-skip-sidecar}" jsonl)}
mkdir -p "$(dirname "$results")"
printf '{"run":{"date":"%s","nproc":%d,"loadavg":"%s","pairs":"%s","concurrency":"%s","ways":"%s","rounds":%d,"duration_s":%d,"warmup_s":%d,"skip_sidecar":%s,"blas_threads":"%s","react_backend":"%s","go":"%s","commit":"%s"}}\n' \
	"$(date -Is)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "${pairs[*]}" "$concurrencies" "$ways" "$rounds" \
	"$seconds" "$warmup" "$([ -n "$skip_sidecar" ] && echo true || echo false)" "${blas_threads:-default}" \
	"${REACT_BACKEND_DIR:-bin/backends/react}" "$(go env GOVERSION)" \
	"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$results"
for pc in ${peer_checks[@]+"${peer_checks[@]}"}; do
	.venv/bin/python -c '
import json, sys
pair, ok = sys.argv[1].split(":")
print(json.dumps({"peer_check": {"pair": pair, "result": ok, "lines": open(sys.argv[2]).read().splitlines()}}))
' "$pc" "$run_dir/peer-check-${pc%%:*}.log" >>"$results"
done
echo "bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $results" >&2

# measure PAIR WAY CONCURRENCY ROUND: one loadgen run, its line appended to
# the results. A loadgen that fails is reported; the run goes on.
measure() {
	local p=$1 way=$2 c=$3 round=$4 args out line
	# Triton's Python backend has crashed under heavy machine load
	# (docs/triton-runtime.md): stop then, rather than measure a dead server.
	if ! kill -0 "$(cat "$run_dir/tritonserver.pid")" 2>/dev/null; then
		echo "bench: TRITON IS GONE before $p $way c=$c round $round; last lines of its log:" >&2
		tail -n 15 "$run_dir/tritonserver.log" | sed 's/^/    /' >&2
		echo "bench: partial results in $results" >&2
		exit 1
	fi
	args=(-concurrency "$c" -duration "${seconds}s" -warmup "${warmup}s" -input "${input[$p]}" -label "$p/$way/c$c/r$round")
	case $way in
	sidecar) args+=(-addr "127.0.0.1:$sc_grpc" -model "explicit_${ensemble[$p]}" -metadata "react-preference=${preference[$p]}") ;;
	graph) args+=(-addr "127.0.0.1:$sc_grpc" -model "${ensemble[$p]}" -metadata "react-preference=${preference[$p]}") ;;
	twocall) args+=(-addr "$triton" -mode twocall -backbone "${backbone[$p]}" -feature "$feature" -head "${head[$p]}") ;;
	ensemble) args+=(-addr "$triton" -model "${ensemble[$p]}") ;;
	react) args+=(-addr "$triton" -model "${react_ensemble[$p]}" -param "react-preference=${preference[$p]}") ;;
	reactnone) args+=(-addr "$triton" -model "${react_ensemble[$p]}" -param "react-preference=none") ;;
	identity) args+=(-addr "$triton" -model "${identity_ensemble[$p]}") ;;
	pystep) args+=(-addr "$triton" -model "${pystep_ensemble[$p]}" -param "react-preference=${preference[$p]}") ;;
	pybls) args+=(-addr "$triton" -model "${pybls_model[$p]}" -param "react-preference=${preference[$p]}") ;;
	esac
	# Every model's statistics over the run (before and after, warmup
	# included), and the step's own time as Triton counts it: react and the
	# numpy step.
	local step='' before
	case $way in
	react | reactnone) step=${react_model[$p]} ;;
	pystep) step=${pystep_model[$p]} ;;
	identity) step=${identity_model[$p]} ;;
	esac
	before=$(curl -s --max-time 5 "http://127.0.0.1:$http_port/v2/models/stats" || true)
	# The profile of the first round (--perf), from the end of the warmup.
	local prof perf_pid=''
	if [ -n "$perf_dir" ] && [ "$round" = 1 ]; then
		prof=$perf_dir/data/$p-$way-c$c.data
		(sleep "$warmup" && exec perf record -q -a -g -e cpu-clock -F 2000 -o "$prof" -- sleep "$seconds") \
			>"$run_dir/perf.log" 2>&1 &
		perf_pid=$!
	fi
	out=$run_dir/loadgen.out
	if ! "$loadgen" "${args[@]}" >"$out" 2>"$run_dir/loadgen.err"; then
		echo "bench:   $p $way c=$c: LOADGEN FAILED: $(tail -n 3 "$run_dir/loadgen.err")" >&2
		[ -z "$perf_pid" ] || wait "$perf_pid" || true
		return 0
	fi
	if [ -n "$perf_pid" ]; then
		if wait "$perf_pid"; then
			profiles+=("$p $way $c")
		else
			echo "bench:   $p $way c=$c: NO PROFILE: $(tail -n 3 "$run_dir/perf.log")" >&2
		fi
	fi
	line=$(.venv/bin/python -c '
import json, sys
line, step = json.loads(sys.argv[1]), sys.argv[2]
try:
    b, a = ({m["name"]: m for m in json.loads(s)["model_stats"]} for s in sys.argv[3:5])
except (ValueError, KeyError, TypeError):
    print(json.dumps(line)); sys.exit()
models = {}
for name, m in a.items():
    if name not in b:
        continue
    d = lambda k: m["inference_stats"][k]["ns"] - b[name]["inference_stats"][k]["ns"]
    n = m["inference_stats"]["success"]["count"] - b[name]["inference_stats"]["success"]["count"]
    if n <= 0:
        continue
    models[name] = {"requests": n, "executions": m["execution_count"] - b[name]["execution_count"],
                    "queue_us": d("queue") / n / 1e3, "input_us": d("compute_input") / n / 1e3,
                    "infer_us": d("compute_infer") / n / 1e3, "output_us": d("compute_output") / n / 1e3}
if models:
    line["models"] = models
if step in models:
    s = models[step]
    line["step"] = {"model": step, "requests": s["requests"], "executions": s["executions"], "queue_us": s["queue_us"],
                    "compute_us": s["input_us"] + s["infer_us"] + s["output_us"]}
print(json.dumps(line))
' "$(cat "$out")" "$step" "$before" "$(curl -s --max-time 5 "http://127.0.0.1:$http_port/v2/models/stats" || true)")
	echo "$line" >>"$results"
	.venv/bin/python -c '
import json, sys
r = json.loads(sys.argv[1])
pair, way, c = sys.argv[2:]
msg = "%9.1f infer/s  p50 %s ms  p99 %s ms  (%d requests)" % (r["throughput"], r["p50_ms"], r["p99_ms"], r["requests"])
if r["errors"] or r["warmup_errors"]:
    msg += "  ERRORS %d (+%d in warmup), first: %s" % (r["errors"], r["warmup_errors"], r.get("first_error", "")[:300])
if "step" in r:
    msg += "  (%s: %.0f µs compute, %.0f µs queue per request)" % (r["step"]["model"], r["step"]["compute_us"], r["step"]["queue_us"])
print("bench:   %-8s %-8s c=%-3s %s" % (pair, way, c, msg), file=sys.stderr)
' "$line" "$p" "$way" "$c"
}

profiled='' profiles=()
for c in $concurrencies; do
	for round in $(seq "$rounds"); do
		echo "bench: concurrency $c, round $round/$rounds (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
		for p in "${pairs[@]}"; do
			for way in $ways; do
				if { [ "$way" = sidecar ] || [ "$way" = graph ]; } && [ "${sidecar_ok[$p]}" != 1 ]; then
					continue
				fi
				if { [ "$way" = react ] || [ "$way" = reactnone ]; } &&
					{ [ "$react_ok" != 1 ] || { [ "$p" = synth ] && [ "$synth_ok" != 1 ]; }; }; then
					continue
				fi
				if [ "$way" = identity ] && { [ "$identity_ok" != 1 ] || [ -z "${identity_model[$p]-}" ]; }; then
					continue
				fi
				if { [ "$way" = pystep ] || [ "$way" = pybls ]; } && [ "${peer_ok[$p]}" != 1 ]; then
					continue
				fi
				prof_pid=
				if [ "$way" = sidecar ] && [ -n "$pprof" ] && [ -z "$profiled" ] && [ "$p" = synth ] && [ "$c" = 32 ]; then
					profiled=1
					(
						sleep "$warmup"
						code=$(curl -s -o "$run_dir/cpu.pprof" -w '%{http_code}' --max-time $((seconds + 30)) \
							"http://127.0.0.1:$sc_pprof/debug/pprof/profile?seconds=$seconds" || true)
						if [ "$code" = 200 ]; then
							mkdir -p "$(dirname "$pprof")" && cp "$run_dir/cpu.pprof" "$pprof" &&
								echo "bench: CPU profile of the sidecar (synth, c=32, ${seconds}s) in $pprof" >&2
						else
							[ "$code" != 000 ] || code="nothing (no listener?)"
							echo "bench: NO PROFILE: the sidecar's pprof listener answered ${code:-nothing} at /debug/pprof/profile" >&2
						fi
					) &
					prof_pid=$!
				fi
				measure "$p" "$way" "$c" "$round"
				[ -z "$prof_pid" ] || wait "$prof_pid" || true
			done
		done
	done
done
if [ -n "$pprof" ] && [ -z "$profiled" ]; then
	echo "bench: NO PROFILE: it is taken during the sidecar's synth round at concurrency 32, which did not run" >&2
fi
echo "bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The profiles' reports, once every run is over (perf report is heavy).
for prof in ${profiles[@]+"${profiles[@]}"}; do
	read -r p way c <<<"$prof"
	data=$perf_dir/data/$p-$way-c$c.data base=$perf_dir/$p-$way-c$c
	tpid=$(cat "$run_dir/tritonserver.pid")
	report=(perf report -i "$data" --stdio --no-children -g none --percentage relative -w "8,28,100")
	"${report[@]}" --sort comm,dso --percent-limit 0.5 >"$base-comm.txt" 2>/dev/null || true
	"${report[@]}" --pid "$tpid" --sort dso,sym --percent-limit 0.3 >"$base-triton.txt" 2>/dev/null || true
	requests=$(.venv/bin/python -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("label") == sys.argv[2]:
        print(r["requests"])
' "$results" "$p/$way/c$c/r1")
	if [ -n "$requests" ] && [ "$requests" -gt 0 ]; then
		.venv/bin/python bench/perf_split.py --data "$data" --pid "$tpid" --requests "$requests" \
			--title "$p $way, concurrency $c (round 1)" >"$base-split.md" 2>&1 || true
	fi
	echo "bench: profile of $p $way c=$c: $base-*.txt" >&2
done
printf '{"end":{"date":"%s","loadavg":"%s"}}\n' "$(date -Is)" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$results"

why_lines= peer_why_lines=
for p in "${pairs[@]}"; do
	[ "${sidecar_ok[$p]}" = 1 ] || why_lines+="$p=${why_not[$p]}"$'\n'
	[ "${peer_ok[$p]}" = 1 ] || peer_why_lines+="$p=${why_peer[$p]}"$'\n'
done
.venv/bin/python - "$results" "$why_lines" "$peer_why_lines" <<'PY'
import collections, json, statistics, sys

path, why = sys.argv[1], dict(l.split("=", 1) for l in sys.argv[2].splitlines() if l)
peer_why = dict(l.split("=", 1) for l in sys.argv[3].splitlines() if l)
runs, pairs, concs = collections.defaultdict(dict), [], []
for line in open(path):
    r = json.loads(line)
    if "mode" not in r:
        continue
    pair, way, c, rnd = r["label"].split("/")
    c, rnd = int(c[1:]), int(rnd[1:])
    runs[(pair, c, way)][rnd] = r
    pairs += [pair] if pair not in pairs else []
    concs += [c] if c not in concs else []

def ok(r):
    return r["requests"] > 0 and r["errors"] == 0

def med(rs, key):
    vals = [r[key] for r in rs if ok(r)]
    return statistics.median(vals) if vals else None

def fmt(x, digits=2):
    return "—" if x is None else f"{x:.{digits}f}"

print("| pair | concurrency | way | infer/s | p50 ms | p99 ms | Δp50 ms vs two-call | Δp99 ms vs two-call | infer/s ÷ two-call | errors |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
notes = []
for pair in pairs:
    for c in sorted(concs):
        base = runs.get((pair, c, "twocall"), {})
        for way in ("sidecar", "graph", "twocall", "ensemble", "react", "pystep", "pybls", "reactnone", "identity"):
            rs = runs.get((pair, c, way), {})
            if not rs:
                if way == "sidecar" and why.get(pair) and why[pair] != "not in --ways":
                    print(f"| {pair} | {c} | sidecar | not run: {why[pair]} | | | | | | |")
                if way == "pystep" and peer_why.get(pair) and peer_why[pair] != "not in --ways":
                    print(f"| {pair} | {c} | pystep, pybls | not run: {peer_why[pair]} | | | | | | |")
                continue
            errors = sum(r["errors"] for r in rs.values())
            d50 = d99 = ratio = None
            if way == "twocall":
                d50 = d99 = ratio = "(baseline)"
            else:
                paired = [(r, base[k]) for k, r in rs.items() if k in base and ok(r) and ok(base[k])]
                if paired:
                    d50 = fmt(statistics.median(r["p50_ms"] - b["p50_ms"] for r, b in paired))
                    d99 = fmt(statistics.median(r["p99_ms"] - b["p99_ms"] for r, b in paired))
                    ratio = fmt(statistics.median(r["throughput"] / b["throughput"] for r, b in paired))
            print(f"| {pair} | {c} | {way} | {fmt(med(rs.values(), 'throughput'), 0)} | {fmt(med(rs.values(), 'p50_ms'))} "
                  f"| {fmt(med(rs.values(), 'p99_ms'))} | {d50 or '—'} | {d99 or '—'} | {ratio or '—'} | {errors} |")
            bad = [r for r in rs.values() if not ok(r)]
            if bad:
                first = next((r.get("first_error") for r in bad if r.get("first_error")), "no answers")
                notes.append(f"- {pair} {way} c={c}: {len(bad)} of {len(rs)} rounds had errors or no answers "
                             f"(left out of the medians); first error: {first[:400]}")
print("\n| pair | concurrency | graph p50 ÷ explicit p50 | Δp50 ms graph − explicit | Δp99 ms graph − explicit "
      "| graph infer/s ÷ explicit |")
print("|---|---:|---:|---:|---:|---:|")
for pair in pairs:
    for c in sorted(concs):
        gs, es = runs.get((pair, c, "graph"), {}), runs.get((pair, c, "sidecar"), {})
        paired = [(g, es[k]) for k, g in gs.items() if k in es and ok(g) and ok(es[k])]
        if not paired:
            continue
        print(f"| {pair} | {c} | {fmt(statistics.median(g['p50_ms'] / e['p50_ms'] for g, e in paired), 3)} "
              f"| {fmt(statistics.median(g['p50_ms'] - e['p50_ms'] for g, e in paired), 3)} "
              f"| {fmt(statistics.median(g['p99_ms'] - e['p99_ms'] for g, e in paired), 3)} "
              f"| {fmt(statistics.median(g['throughput'] / e['throughput'] for g, e in paired), 3)} |")
print("\n| pair | concurrency | react p50 ÷ ensemble p50 | Δp50 ms vs ensemble | Δp99 ms vs ensemble "
      "| infer/s ÷ ensemble | react p50 ÷ sidecar p50 |")
print("|---|---:|---:|---:|---:|---:|---:|")
for pair in pairs:
    for c in sorted(concs):
        rs, ens, sc = (runs.get((pair, c, w), {}) for w in ("react", "ensemble", "sidecar"))
        paired = [(r, ens[k]) for k, r in rs.items() if k in ens and ok(r) and ok(ens[k])]
        if not paired:
            continue
        vs_sc = [r["p50_ms"] / sc[k]["p50_ms"] for k, r in rs.items() if k in sc and ok(r) and ok(sc[k])]
        print(f"| {pair} | {c} | {fmt(statistics.median(r['p50_ms'] / e['p50_ms'] for r, e in paired), 3)} "
              f"| {fmt(statistics.median(r['p50_ms'] - e['p50_ms'] for r, e in paired), 3)} "
              f"| {fmt(statistics.median(r['p99_ms'] - e['p99_ms'] for r, e in paired), 3)} "
              f"| {fmt(statistics.median(r['throughput'] / e['throughput'] for r, e in paired))} "
              f"| {fmt(statistics.median(vs_sc) if vs_sc else None)} |")
peer_rows = any(w in ("pystep", "pybls") for (_, _, w) in runs)
if peer_rows:
    print("\n| pair | concurrency | react Δp50 ms vs ensemble | pystep Δp50 ms vs ensemble "
          "| react added ÷ pystep added (target ≤ 0.33) | pybls Δp50 ms vs ensemble | react p50 ÷ pystep p50 "
          "| react p50 ÷ pybls p50 | react infer/s ÷ pystep | react infer/s ÷ pybls "
          "| react step µs | numpy step µs | react ÷ numpy step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

def paired(a, b, f):
    vals = [f(r, b[k]) for k, r in a.items() if k in b and ok(r) and ok(b[k])]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

def step_us(rs):
    vals = [r["step"]["compute_us"] for r in rs.values() if ok(r) and "step" in r]
    return statistics.median(vals) if vals else None

for pair in pairs:
    for c in sorted(concs):
        rs, ens, ps, pb = (runs.get((pair, c, w), {}) for w in ("react", "ensemble", "pystep", "pybls"))
        if not ps and not pb:
            continue
        dlat = lambda r, e: r["p50_ms"] - e["p50_ms"]
        r_add, p_add, b_add = paired(rs, ens, dlat), paired(ps, ens, dlat), paired(pb, ens, dlat)
        share = r_add / p_add if r_add is not None and p_add is not None and p_add > 0 else None
        print(f"| {pair} | {c} | {fmt(r_add, 3)} | {fmt(p_add, 3)} | {fmt(share)} | {fmt(b_add, 3)} "
              f"| {fmt(paired(rs, ps, lambda r, b: r['p50_ms'] / b['p50_ms']), 3)} "
              f"| {fmt(paired(rs, pb, lambda r, b: r['p50_ms'] / b['p50_ms']), 3)} "
              f"| {fmt(paired(rs, ps, lambda r, b: r['throughput'] / b['throughput']))} "
              f"| {fmt(paired(rs, pb, lambda r, b: r['throughput'] / b['throughput']))} "
              f"| {fmt(step_us(rs), 0)} | {fmt(step_us(ps), 0)} "
              f"| {fmt(paired(rs, ps, lambda r, b: r['step']['compute_us'] / b['step']['compute_us'] if 'step' in r and 'step' in b else None))} |")
if peer_rows:
    print("\n(react added ÷ pystep added: the median over the rounds of the react step's added p50 over the plain "
          "ensemble, divided by the median of the numpy step's; — where the numpy step added nothing measurable. "
          "react step µs, numpy step µs: the step model's compute time per request (input, execute, output) from "
          "Triton's statistics over the run, warmup included: its own work, without the queue and the client's noise)")
steps = [w for w in ("ensemble", "identity", "reactnone", "react", "pystep") if any(k[2] == w for k in runs)]
if "ensemble" in steps and len(steps) > 1:
    # The step ways against the plain ensemble, with the step model's own
    # time as Triton counts it (median per request over the rounds).
    print("\n| pair | concurrency | way | p50 ms | p50 ÷ ensemble | Δp50 ms vs ensemble | step model "
          "| queue µs | input µs | infer µs | output µs | requests per execution |")
    print("|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for pair in pairs:
        for c in sorted(concs):
            ens = runs.get((pair, c, "ensemble"), {})
            for way in steps:
                rs = runs.get((pair, c, way), {})
                if not rs:
                    continue
                step = next((r["step"]["model"] for r in rs.values() if "step" in r), None)
                def st(key):
                    vals = [r["models"][step][key] for r in rs.values() if ok(r) and step in r.get("models", {})]
                    return statistics.median(vals) if vals else None
                per_exec = None
                if step:
                    vals = [r["models"][step]["requests"] / r["models"][step]["executions"]
                            for r in rs.values() if ok(r) and step in r.get("models", {}) and r["models"][step]["executions"]]
                    per_exec = statistics.median(vals) if vals else None
                print(f"| {pair} | {c} | {way} | {fmt(med(rs.values(), 'p50_ms'), 3)} "
                      f"| {fmt(paired(rs, ens, lambda r, e: r['p50_ms'] / e['p50_ms']), 3) if way != 'ensemble' else '(baseline)'} "
                      f"| {fmt(paired(rs, ens, lambda r, e: r['p50_ms'] - e['p50_ms']), 3) if way != 'ensemble' else '(baseline)'} "
                      f"| {step or '—'} | {fmt(st('queue_us'), 0) if step else '—'} | {fmt(st('input_us'), 0) if step else '—'} "
                      f"| {fmt(st('infer_us'), 0) if step else '—'} | {fmt(st('output_us'), 0) if step else '—'} "
                      f"| {fmt(per_exec) if step else '—'} |")
    print("\n| pair | concurrency | way | model | queue µs | input µs | infer µs | output µs | requests per execution |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for pair in pairs:
        for c in sorted(concs):
            for way in steps:
                rs = [r for r in runs.get((pair, c, way), {}).values() if ok(r) and "models" in r]
                for model in sorted({m for r in rs for m in r["models"]}):
                    ms = [r["models"][model] for r in rs if model in r["models"]]
                    m = lambda k: statistics.median(x[k] for x in ms)
                    pe = statistics.median(x["requests"] / x["executions"] for x in ms if x["executions"]) if any(x["executions"] for x in ms) else None
                    print(f"| {pair} | {c} | {way} | {model} | {m('queue_us'):.0f} | {m('input_us'):.0f} | {m('infer_us'):.0f} "
                          f"| {m('output_us'):.0f} | {fmt(pe)} |")
    print("\n(each model's time per request from Triton's statistics over the run, warmup included, median over the "
          "rounds: queue is the wait in its scheduler, input/infer/output what its backend reports; an ensemble's own "
          "line covers its steps)")
n = max((len(v) for v in runs.values()), default=0)
print(f"\n(medians over {n} rounds; Δ and ÷ are medians of the per-round differences and ratios against "
      "two-call in the same round; a round with any error is left out)")
if notes:
    print("\nErrors:\n" + "\n".join(notes))
PY
echo "bench: raw results in $results" >&2
done=1
