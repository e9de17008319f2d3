"""The table of bench/gpu.sh: the cuda backend's Go benchmarks beside
PyTorch's timings (bench/gpu_torch.py), as markdown on stdout.

    python3 bench/gpu_table.py bench-go.txt bench-torch.json machine.txt

Both sides are measured the same way (react/cudadevice/bench_test.go):
medians of the wall time of one call and of the GPU span between CUDA
events around it, and for a batch already on the GPU the GPU time of the
work alone. Each Go figure is the best of its -count runs' medians.
"""

import json
import re
import sys

NAME = re.compile(r"^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+")
METRIC = re.compile(r"([\d.e+-]+) (wall-p50-ms/op|span-p50-ms/op|gpu-ms/op)")


def go_results(path):
    """{name: {metric: value}}, the run with the best wall median of each."""
    best = {}
    with open(path) as f:
        for line in f:
            m = NAME.match(line.strip())
            if not m:
                continue
            metrics = {k: float(v) for v, k in METRIC.findall(line)}
            if "wall-p50-ms/op" not in metrics:
                continue
            name = m.group(1)
            if name not in best or metrics["wall-p50-ms/op"] < best[name]["wall-p50-ms/op"]:
                best[name] = metrics
    return best


def fmt(x):
    return "—" if x is None else f"{x:.4f}" if x < 0.1 else f"{x:.3f}"


def ratio(ours, theirs):
    return "—" if not ours or not theirs else f"{ours / theirs:.2f}"


def main(go_path, torch_path, machine_path):
    go = go_results(go_path)
    with open(torch_path) as f:
        torch = json.load(f)
    with open(machine_path) as f:
        machine = f.read().strip()
    print(f"GPU: {torch['device']}; PyTorch {torch['torch']} (CUDA {torch['cuda']}).")
    print(f"Machine: {machine}")
    print("\nW_p for the equal preference over T tasks, float64 (ms, medians; span = GPU time between events around the call):\n")
    print("| D | T | ours wall | ours span | PyTorch wall | PyTorch span | wall ratio (ours / PyTorch) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in torch["solve"]:
        o = go.get(f"DeviceSolve/D={r['D']}/T={r['T']}", {})
        w = o.get("wall-p50-ms/op")
        print(f"| {r['D']} | {r['T']} | {fmt(w)} | {fmt(o.get('span-p50-ms/op'))} | {fmt(r['wall_ms'])} | {fmt(r['span_ms'])} | {ratio(w, r['wall_ms'])} |")
    print("\nThe correction Z W_pᵀ of B rows, float32 (ms, medians; GPU = the work alone, resident batches only):\n")
    print("| D | B | batch | ours GPU | ours wall | PyTorch GPU | PyTorch wall | GPU ratio | wall ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in torch["apply"]:
        o = go.get(f"DeviceApply/{r['mode']}/D={r['D']}/B={r['B']}", {})
        g, w = o.get("gpu-ms/op"), o.get("wall-p50-ms/op")
        print(f"| {r['D']} | {r['B']} | {r['mode']} | {fmt(g)} | {fmt(w)} | {fmt(r['gpu_ms'])} | {fmt(r['wall_ms'])} | {ratio(g, r['gpu_ms'])} | {ratio(w, r['wall_ms'])} |")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
