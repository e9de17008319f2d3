#!/usr/bin/env bash
# The linear algebra on one core, side by side in one run: react's hot paths
# on gonum's pure Go, the same on OpenBLAS (the openblas build tag, what
# make build links), and what a Python user does with numpy and SciPy
# (bench/linalg_numpy.py, numpy's wheel's own OpenBLAS), for the same shapes:
#
#   Solve/D/T            W_p for a uniform preference over T tasks
#   FirstRequest/D/T=8   a new preference's first request (one row):
#                        factored (what the sidecar does) or W_p formed first
#   Correct/B/D          ẑ = W z for a batch of B rows (float32)
#   Accumulate/D         256 paired float32 rows into float64 S and G
#   Peak                 one large DGEMM and SGEMM (n = 2048): the limit
#
# Everything runs on one thread (GOMAXPROCS=1, OPENBLAS_NUM_THREADS=1),
# in --rounds rounds (default 2) that alternate the three, and the table
# keeps each figure's best round. Raw output goes to
# bench/results/linalg-DATE.txt, the table to stdout (markdown).
#
#   bench/linalg.sh [--rounds N] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2 quick=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--quick) quick=--quick; shift ;;
	*) echo "usage: $0 [--rounds N] [--quick]" >&2; exit 2 ;;
	esac
done
PY=.venv/bin/python
"$PY" -c 'import scipy' 2>/dev/null || { echo "linalg: no scipy in .venv; run make setup" >&2; exit 1; }
mkdir -p bench/results .cache/bench
out=bench/results/linalg-$(date -u +%Y-%m-%d).txt
export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
go test -c -o .cache/bench/react-go.test ./react
go test -c -tags openblas -o .cache/bench/react-openblas.test ./react
bt=10x
[ -z "$quick" ] || bt=3x
{
	echo "# bench/linalg.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc --all) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3), commit $(git rev-parse --short HEAD)"
	grep -m1 'model name' /proc/cpuinfo
	for r in $(seq "$rounds"); do
		for b in go openblas; do
			echo "## round $r backend $b"
			(cd react && REACT_TEST_BACKEND=$b ../.cache/bench/react-$b.test -test.run '^$' \
				-test.bench 'Solve|FirstRequest|Peak' -test.benchtime $bt -test.benchmem)
			(cd react && REACT_TEST_BACKEND=$b ../.cache/bench/react-$b.test -test.run '^$' \
				-test.bench 'Correct|Accumulate' -test.benchtime 1s -test.benchmem)
		done
		echo "## round $r numpy"
		"$PY" bench/linalg_numpy.py $quick
	done
	echo "# load average after $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$out" >&2
"$PY" bench/linalg_table.py "$out"
