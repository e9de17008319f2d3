"""The table of bench/linalg.sh from its raw output: per figure, the best
round of each of pure Go, OpenBLAS (through Go) and numpy/SciPy, and the
ratios. Usage: python bench/linalg_table.py bench/results/linalg-DATE.txt"""
import json
import re
import sys

BENCH = re.compile(r"^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$")


def parse(path):
    best = {}  # (backend, name) -> ns/op
    peak = {}
    backend = None
    numpy_info = ""
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("## round"):
            backend = line.split()[-1]
            continue
        m = BENCH.match(line)
        if m and backend in ("go", "openblas"):
            name, ns = m.group(1), float(m.group(2))
            key = (backend, name)
            best[key] = min(best.get(key, float("inf")), ns)
            g = re.search(r"([\d.]+) GFLOP/s", m.group(3))
            if g:
                peak[key] = max(peak.get(key, 0), float(g.group(1)))
            continue
        if line.startswith("{") and backend == "numpy":
            rec = json.loads(line)
            if "info" in rec:
                numpy_info = rec["info"]
                continue
            key = ("numpy", rec["name"])
            best[key] = min(best.get(key, float("inf")), rec["ns_per_op"])
            if "gflops" in rec:
                peak[key] = max(peak.get(key, 0), rec["gflops"])
    return best, peak, numpy_info


def fmt_time(ns):
    return f"{ns / 1e6:.2f} ms" if ns >= 1e5 else f"{ns / 1e3:.1f} µs"


def main():
    best, peak, info = parse(sys.argv[1])
    names = []
    for _, n in best:
        if n not in names:
            names.append(n)
    print(f"numpy/SciPy: {info}\n")
    print("| figure | pure Go | OpenBLAS (Go) | numpy/SciPy | OpenBLAS ÷ numpy | OpenBLAS speed-up over pure Go |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in names:
        if n.startswith("Peak"):
            continue
        g, o, p = best.get(("go", n)), best.get(("openblas", n)), best.get(("numpy", n))
        cells = [fmt_time(v) if v else "—" for v in (g, o, p)]
        extra = ""
        if n.startswith(("Correct", "Accumulate")):
            rows = int(re.search(r"B=(\d+)", n).group(1)) if n.startswith("Correct") else 256
            cells = [c + (f" ({rows / (v / 1e9):,.0f} rows/s)" if v else "") for c, v in zip(cells, (g, o, p))]
        ratio = f"{o / p:.2f}" if o and p else "—"
        speed = f"{g / o:.1f}×" if g and o else "—"
        print(f"| {n} | {cells[0]} | {cells[1]} | {cells[2]} | {ratio}{extra} | {speed} |")
    print("\n| peak (n = 2048, one core) | pure Go | OpenBLAS (Go) | numpy/SciPy |")
    print("|---|---:|---:|---:|")
    for n in ("Peak/DGEMM/n=2048", "Peak/SGEMM/n=2048"):
        cells = [f"{peak[(b, n)]:.1f} GFLOP/s" if (b, n) in peak else "—" for b in ("go", "openblas", "numpy")]
        print(f"| {n.split('/')[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
