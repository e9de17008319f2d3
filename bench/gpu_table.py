"""The table of bench/gpu.sh: the cuda backend's Go benchmarks beside
PyTorch's timings (bench/gpu_torch.py), as markdown on stdout.

    python3 bench/gpu_table.py bench-go.txt bench-torch.json machine.txt

Each Go figure is the best of its -count runs (ns/op is wall time per
operation, gpu-ms/op the GPU time between CUDA events around it);
PyTorch's are medians of its runs.
"""

import json
import re
import sys

LINE = re.compile(r"^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op.*?([\d.]+) gpu-ms/op")


def go_results(path):
    """{name: (wall_ms, gpu_ms)}, the best run of each."""
    best = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            name, wall, gpu = m.group(1), float(m.group(2)) / 1e6, float(m.group(3))
            if name not in best or wall < best[name][0]:
                best[name] = (wall, gpu)
    return best


def fmt(x):
    return "—" if x is None else f"{x:.3f}"


def main(go_path, torch_path, machine_path):
    go = go_results(go_path)
    with open(torch_path) as f:
        torch = json.load(f)
    with open(machine_path) as f:
        machine = f.read().strip()
    print(f"GPU: {torch['device']}; PyTorch {torch['torch']} (CUDA {torch['cuda']}).")
    print(f"Machine: {machine}")
    table(
        "W_p for the equal preference over T tasks, float64 (ms; GPU time between CUDA events / wall):",
        "| D | T |",
        [(f"| {r['D']} | {r['T']} |", go.get(f"DeviceSolve/D={r['D']}/T={r['T']}"), r) for r in torch["solve"]],
    )
    table(
        "The correction Z W_pᵀ of B rows at D = 768, float32 (ms):",
        "| B | batch |",
        [(f"| {r['B']} | {r['mode']} |", go.get(f"DeviceApply/{r['mode']}/B={r['B']}"), r) for r in torch["apply"]],
    )


def table(title, keys, rows):
    """A markdown table: the key columns, then ours and PyTorch's GPU and wall times."""
    print(f"\n{title}\n")
    print(f"{keys} cuda backend GPU | cuda backend wall | PyTorch GPU | PyTorch wall |")
    print("|---" * (keys.count("|") - 1) + "|---:" * 4 + "|")
    for key, ours, theirs in rows:
        ours = ours or (None, None)
        print(f"{key} {fmt(ours[1])} | {fmt(ours[0])} | {fmt(theirs['gpu_ms'])} | {fmt(theirs['wall_ms'])} |")

if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
