# Sourced by the benchmark scripts that serve the synthetic components
# (bench/abuse.sh, bench/sidecar-controllable.sh), after bench/lib/run.sh
# (bench_run_dir called).
#
#   bench_synth_components FILE
#
# Makes the synthetic components at FILE (D=768, tasks t0..t7:
# bench/synth-components.py's embeddings, then bin/calibrate fit --beta
# 0.1), or reuses the file when neither that script nor bin/calibrate has
# changed since it was made (a key beside it). Returns 1, with the tail of
# calibrate's log on standard error, when they cannot be made.

# shellcheck shell=bash disable=SC2154 # run_dir and bench_tag: run.sh's
bench_synth_components() {
	local file=$1 dir key
	dir=$(dirname "$file")
	key=$(cat bench/synth-components.py bin/calibrate | sha256sum | cut -d' ' -f1)
	if [ -f "$file" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ]; then
		echo "$bench_tag: reusing $file" >&2
		return 0
	fi
	echo "$bench_tag: making the synthetic components (D=768, 8 tasks; about 30 s)" >&2
	rm -rf "$dir" && mkdir -p "$dir"
	if .venv/bin/python bench/synth-components.py "$dir/embeddings" >&2 &&
		bin/calibrate fit --embeddings "$dir/embeddings" --beta 0.1 --out "$file" >"$run_dir/calibrate.log" 2>&1; then
		echo "$key" >"$dir/key"
		rm -rf "$dir/embeddings"
		return 0
	fi
	tail -n 20 "$run_dir/calibrate.log" >&2 || true
	return 1
}
