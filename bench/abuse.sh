#!/usr/bin/env bash
# The abuse suite of issue 22: the probes of its items 1 to 3 against the
# real Triton and the sidecar, on loopback, each in a window of its own,
# side by side with a baseline window, while a well-behaved client keeps
# calling.
#
#   bench/abuse.sh [-d SECONDS] [--quiet SECONDS] [--out FILE]
#
# SOLVE_RATE (default 10: the rate that met issue 22's target in the sixth
# stop's third run, with the formation deferred under a rate;
# bench/README.md) is admission.solve_rate in flood-solverate.
# Triton (tritonmodels' python backend) serves bench/models (synth_backbone
# -> synth_head, D=768) and triton/testdata/repo's affine_fp32; the sidecar
# serves the controllable model "synth" over the synthetic D=768 components
# of bench/synth-components.py (8 tasks, made and reused as
# bench/sidecar-controllable.sh makes them), with the default limits,
# cache and admission (but admission.key_header x-user-id; the defaults
# include solve_share 0.1 and shed_delay 100ms since the seventh stop of
# 2026-11-27, so the windows without a reload measure them), and GOMEMLIMIT
# set as docs/deploy.md sets it in the manifests: to the memory budget the
# sidecar computes for its configuration (its start-up log line), which the
# suite reads from a first start.
#
# Windows (-d seconds each, default 20), in order:
#   baseline   the well-behaved client alone;
#   spin       a process keeping one core busy at nice 19, no sidecar
#              involved: what any background work costs the well-behaved
#              client on this machine (the floor the probes are read
#              against);
#   membw      a process at nice 19 streaming over 64 MiB of float64 (more
#              than the last-level cache), one core, no sidecar involved:
#              what a memory-bound neighbour costs, the cache it evicts
#              included;
#   solves     a process at nice 10 (every thread) running the sidecar's
#              solve code for new random preferences, one at a time, at
#              most 20 a second (about the flood's rate), over the same
#              components (bench/abuse solves: react's Solver.Factor, as
#              the sidecar on a miss), no sidecar involved: what doing the
#              flood's solves costs on this machine without any request
#              handling;
#   inputs     HTTP bodies of 50,000 inputs and 50,000 outputs (3.5 MB) to
#              a pass-through model, and of 1,000 inputs and outputs (under
#              the caps) to the controllable model: 2 clients each, each
#              sending one a second (the issue's probe: 8k to 50k inputs
#              cost 0.27 to 7.8 s of CPU each);
#   hangups    2.8 MB bodies of 50,000 inputs whose clients hang up 1 s
#              after writing them (the issue's probe), and 2 MB bodies of
#              one input of 1,000,000 JSON numbers whose clients hang up
#              after 20 ms, while the sidecar checks them: 2 clients each,
#              one body a second each;
#   flood      new random preferences at D=768, 8 at a time, no key (held
#              by the default admission.solve_share);
#   flood-apart  the flood's two halves apart, as a reference: its request
#              traffic (8 clients, each one request every 400 ms, about
#              the flood's rate, over 8 preferences cached after their
#              first solves) against the sidecar, and its solves in the
#              separate process of the solves window; against the flood,
#              what solving inside the sidecar adds;
#   deadlines  new random preferences, 16 at a time, each with a 50 ms
#              deadline;
#   flood-keyrate  the flood again, after a reload that sets
#              admission.key_rate 5 (burst 10): the flood's clients share
#              their peer's key, the well-behaved client has its own;
#   flood-solverate  the flood again, after a reload that clears key_rate
#              and sets admission.solve_rate $SOLVE_RATE (its default
#              burst: one second's worth): one budget of new preferences
#              for the whole sidecar, whatever the key;
#   flood-presets  the flood again, after a reload that sets
#              admission.presets_only: every new preference is refused
#              (INVALID_ARGUMENT) before any solve, the well-behaved
#              client's preference, equal to the preset "good", served;
#   flood-template, deadlines-template  the flood and the deadlines' flood
#              again, after a reload to the admission of the production
#              template (docker/k8s/base/sidecar.yaml: its key_rate,
#              key_burst, solve_rate and shed_delay, read from it).
# The well-behaved client is bench/loadgen at concurrency 1 on "synth",
# with a fixed preference (cached after its warm-up) and its own
# x-user-id. After each window the suite waits --quiet seconds (default 5)
# with no traffic, to see what the sidecar still does once its clients
# have left.
#
# Recorded per window: the well-behaved client's requests, failures, p50
# and p99; the probes' requests and answers; the sidecar's CPU seconds in
# the window and in the quiet period after it, its peak RSS, its solves
# and formations of W_p, and its goroutines and solves left at the end of
# the quiet period. Every sample
# goes to --out (default bench/results/abuse-DATE.jsonl); the table goes to
# standard output. Targets (issue 22): p99 within 2x the baseline's and no
# failed well-behaved request in every window; peak RSS within the memory
# budget + 100 MB in the flood; at most 100 ms of CPU per request after its
# client left (the quiet periods).
set -euo pipefail
# Triton's Python stand-ins (the synth backbone and head) multiply with
# numpy, whose OpenBLAS threads spin on sched_yield when idle and took about
# 70 % of both cores in every window of the runs before this default
# (bench/README.md, "fifth stop, second run"): one thread each, unless the
# caller says.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
solve_rate=${SOLVE_RATE:-10}
cd "$(dirname "$0")/.."

usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
bench_tag=abuse
. bench/lib/run.sh
. bench/lib/abuse.sh
. bench/lib/synth.sh
abuse_args 5 "" "$@"
bench_run_dir abuse
abuse_build

# The synthetic components (D=768, tasks t0..t7), as sidecar-controllable.sh makes them.
components=$PWD/.cache/bench/synth/components.safetensors
bench_synth_components "$components" || exit 1

bench_triton --repo bench/models --repo triton/testdata/repo -- --model-control-mode=explicit \
	--load-model=synth_backbone --load-model=synth_head --load-model=affine_fp32

abuse_config "Written by bench/abuse.sh: the defaults, but for the key header."
cat >>"$config" <<EOF
admission:
  key_header: x-user-id
components:
  - name: synth
    path: $components
    presets:
      good: t0=0.6,t1=0.4
models:
  - name: synth
    backbone: {model: synth_backbone, output: feature}
    heads:
      - {task: t0, model: synth_head}
EOF

# A first start tells the memory budget; the suite's sidecar runs with
# GOMEMLIMIT set to it, as the manifests are.
abuse_start_sidecar
budget_mib=$(sed -n 's/.*memory_budget="[^"]*total \([0-9]*\) MiB".*/\1/p' "$run_dir/sidecar.log" | tail -n 1)
[ -n "$budget_mib" ] || { echo "abuse: no memory budget in the sidecar's log" >&2; exit 1; }
kill -TERM "$sidecar_pid"; wait "$sidecar_pid" || true
abuse_start_sidecar GOMEMLIMIT="${budget_mib}MiB"
echo "abuse: sidecar pid $sidecar_pid, memory budget $budget_mib MiB (GOMEMLIMIT), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), admission.solve_rate $solve_rate in flood-solverate" >&2

abuse_results

good_args=(-addr "127.0.0.1:$sc_grpc" -model synth -input x:768 -concurrency 1 -duration "$((seconds - 2))s" -warmup 2s
	-metadata react-preference=t0=0.6,t1=0.4 -metadata x-user-id=good)
sidecar_http=http://127.0.0.1:$sc_http/v2/models

# run_probe PROBE: one abuse run of the arguments PROBE, for the window.
run_probe() {
	# shellcheck disable=SC2086 # a probe is a word list
	"$abuse" $1 -duration "${seconds}s"
}

window baseline
window spin "spin"
window membw "membw"
window solves "solves -components $components -rate 20"
window inputs "bodies -url $sidecar_http/affine_fp32/infer -inputs 50000 -outputs 50000 -concurrency 2 -interval 1s" \
	"bodies -url $sidecar_http/synth/infer -inputs 1000 -outputs 1000 -concurrency 2 -interval 1s"
window hangups "bodies -url $sidecar_http/affine_fp32/infer -inputs 50000 -concurrency 2 -interval 1s -hangup 1s" \
	"bodies -url $sidecar_http/affine_fp32/infer -inputs 1 -elements 1000000 -concurrency 2 -interval 1s -hangup 20ms"
window flood "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8"
window flood-apart "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8 -prefs 8 -interval 400ms -seed 9" \
	"solves -components $components -rate 20 -seed 6"
window deadlines "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 16 -deadline 50ms -seed 2"

# reload WHAT SED: edits the sidecar's configuration with the sed script
# SED and reloads it (SIGHUP), as an operator would; WHAT names the change
# when the reload does not happen.
reloads() { curl -s "http://127.0.0.1:$sc_metrics/metrics" | sed -n 's/^react_config_reloads_total{result="success"} //p'; }
reload() {
	local before
	before=$(reloads)
	sed -i "$2" "$config"
	kill -HUP "$sidecar_pid"
	for _ in $(seq 100); do [ "$(reloads)" != "$before" ] && return 0; sleep 0.1; done
	echo "abuse: the reload with $1 did not happen" >&2
	exit 1
}

# The same flood with a per-key limit: the flood's clients send no key, so
# they share their peer's (127.0.0.1), limited to 5 new preferences a
# second; the well-behaved client has its own x-user-id.
reload admission.key_rate 's/^  key_header: x-user-id$/  key_header: x-user-id\n  key_rate: 5\n  key_burst: 10/'
window flood-keyrate "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8 -seed 3"

# The same flood with one limit for the whole sidecar instead: key_rate
# cleared, at most $solve_rate new preferences a second whatever their key.
reload admission.solve_rate "/^  key_rate: /d; /^  key_burst: /d; s/^  key_header: x-user-id\$/  key_header: x-user-id\n  solve_rate: $solve_rate/"
window flood-solverate "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8 -seed 5"

# Presets only: what an operator turns on when new preferences must cost
# nothing. The well-behaved client's preference equals the preset "good".
reload admission.presets_only 's/^  key_header: x-user-id$/  key_header: x-user-id\n  presets_only: true/'
window flood-presets "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8 -seed 4"

# The production template's admission (docker/k8s/base/sidecar.yaml, read
# from it): its per-user rate and its rate for the whole sidecar together,
# against the flood and against the flood with deadlines.
template=docker/k8s/base/sidecar.yaml
tpl() { sed -n "s/^  $1: \([0-9.]*\).*/\1/p" "$template"; }
tpl_key_rate=$(tpl key_rate) tpl_key_burst=$(tpl key_burst) tpl_solve_rate=$(tpl solve_rate)
tpl_shed_delay=$(sed -n 's/^  shed_delay: \([0-9a-z.]*\).*/\1/p' "$template")
[ -n "$tpl_key_rate" ] && [ -n "$tpl_key_burst" ] && [ -n "$tpl_solve_rate" ] && [ -n "$tpl_shed_delay" ] ||
	{ echo "abuse: no key_rate, key_burst, solve_rate and shed_delay in $template" >&2; exit 1; }
reload "the template's admission" "/^  presets_only: /d; /^  solve_rate: /d; s/^  key_header: x-user-id\$/  key_header: x-user-id\n  key_rate: $tpl_key_rate\n  key_burst: $tpl_key_burst\n  solve_rate: $tpl_solve_rate\n  shed_delay: $tpl_shed_delay/"
window flood-template "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 8 -seed 7"
window deadlines-template "flood -addr 127.0.0.1:$sc_grpc -model synth -input x:768 -concurrency 16 -deadline 50ms -seed 8"

abuse_check_servers
printf '{"end":{"date":"%s","loadavg":"%s"}}\n' "$(date -Is)" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$results"
.venv/bin/python bench/abuse_table.py "$results"
echo "abuse: raw results in $results" >&2
done=1
