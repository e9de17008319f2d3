#!/usr/bin/env bash
# The CPU side of issue 28, a commit against the working tree, side by side:
# both test binaries built (openblas and pure Go), then run in turn, three
# rounds, on one core for the solves (GOMAXPROCS=1, OPENBLAS_NUM_THREADS=1):
#   react          BenchmarkSolve (D = 512, 768; T = 8), BenchmarkFirstRequest
#   backend/model  BenchmarkExecute, BenchmarkExecuteManyPreferences (copied
#                  into the old tree when it lacks it)
# and the react benchmarks again on two cores (GOMAXPROCS=2), OpenBLAS at
# one thread a call (solve-2x1-*.txt) and at two (solve-2x2-*.txt),
# then the solve's steps and the two Cholesky factorisations, new only.
#
#   bench/cpu-before-after.sh OLDREV [OUTDIR]     (default .cache/bench/cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/cpu-before-after.sh OLDREV [OUTDIR]}
out=${2:-.cache/bench/cpu}
root=$PWD
tree=$root/.cache/bench/old-tree
mkdir -p "$out"
out=$(cd "$out" && pwd)
git worktree remove --force "$tree" 2>/dev/null || true
git worktree add -f --detach "$tree" "$old" >/dev/null
trap 'git -C "$root" worktree remove --force "$tree" 2>/dev/null || true' EXIT
# The old tree gets the new benchmark of many preferences if it lacks it.
python3 - "$root/backend/model/execute_test.go" "$tree/backend/model/execute_test.go" <<'PY'
import sys
new, old = (open(p).read() for p in sys.argv[1:])
if 'BenchmarkExecuteManyPreferences' not in old:
    i = new.index('// BenchmarkExecuteManyPreferences')
    j = new.index('\n}\n', i) + 3
    old = old.rstrip() + '\n\n' + new[i:j]
    for imp in ('"fmt"', '"time"'):
        if '\t' + imp + '\n' not in old:
            old = old.replace('import (\n', 'import (\n\t' + imp + '\n', 1)
    open(sys.argv[2], 'w').write(old)
PY
for t in old new; do
	d=$tree
	[ $t = new ] && d=$root
	(cd "$d" && go test -c -tags openblas -o "$out/react-$t.test" ./react &&
		go test -c -tags openblas -o "$out/model-$t.test" ./backend/model &&
		go test -c -o "$out/reactgo-$t.test" ./react)
done
{ lscpu | grep -E 'Model name|^CPU\(s\)'; echo "old $old, new $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (and uncommitted changes)')"; uptime; } >"$out/machine.txt"
rm -f "$out"/solve-*.txt "$out"/solvego-*.txt "$out"/model-*.txt
for r in 1 2 3; do
	for t in old new; do
		(cd react && GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 "$out/react-$t.test" -test.run '^$' \
			-test.bench 'BenchmarkSolve$/D=(512|768)/T=8|BenchmarkFirstRequest' -test.benchtime 10x) >>"$out/solve-$t.txt"
		for ob in 1 2; do
			(cd react && GOMAXPROCS=2 OPENBLAS_NUM_THREADS=$ob "$out/react-$t.test" -test.run '^$' \
				-test.bench 'BenchmarkSolve$/D=(512|768)/T=8|BenchmarkFirstRequest/D=(512|768)/T=8/bounded' -test.benchtime 10x) >>"$out/solve-2x$ob-$t.txt"
		done
		(cd react && GOMAXPROCS=1 "$out/reactgo-$t.test" -test.run '^$' -test.bench 'BenchmarkSolve$/D=(512|768)/T=8' -test.benchtime 5x) >>"$out/solvego-$t.txt"
		(cd backend/model && "$out/model-$t.test" -test.run '^$' -test.bench 'ExecuteManyPreferences|BenchmarkExecute$' -test.benchtime 2000x) >>"$out/model-$t.txt"
	done
done
(cd react && "$out/react-new.test" -test.run '^$' -test.bench 'SolveSteps|PotrfOpenBLAS' -test.benchtime 10x -test.count 3) >"$out/steps.txt"
uptime >>"$out/machine.txt"
echo "bench: results in $out"
