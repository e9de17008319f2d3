"""Medians of bench/cpu-before-after.sh's react results, old beside new.

    python3 bench/cpu_table.py OUTDIR

For each file pair OUTDIR/solve*-old.txt and -new.txt (one core, two cores
at one or two OpenBLAS threads a call), prints a Markdown table of every
benchmark's median milliseconds (its ms/solve or ms/request metric, else
ns/op) over the rounds, old, new and new ÷ old.
"""

import pathlib
import re
import statistics
import sys

LINE = re.compile(r"^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(\d+(?:\.\d+)?) ns/op(.*)$")
METRIC = re.compile(r"(\d+(?:\.\d+)?) ms/(?:solve|request)")


def medians(path):
    runs = {}
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name, ns, rest = m.groups()
        metric = METRIC.search(rest)
        ms = float(metric.group(1)) if metric else float(ns) / 1e6
        runs.setdefault(name, []).append(ms)
    return {k: statistics.median(v) for k, v in runs.items()}


def main(out):
    out = pathlib.Path(out)
    for old_path in sorted(out.glob("solve*-old.txt")):
        new_path = old_path.with_name(old_path.name.replace("-old", "-new"))
        old, new = medians(old_path), medians(new_path)
        print(f"\n{old_path.name.replace('-old.txt', '')}\n")
        print("| benchmark | old ms | new ms | new ÷ old |")
        print("|---|---:|---:|---:|")
        for name in old:
            if name in new:
                print(f"| {name} | {old[name]:.2f} | {new[name]:.2f} | {new[name] / old[name]:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
