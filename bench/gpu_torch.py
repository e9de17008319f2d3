"""PyTorch's side of bench/gpu.sh, on the same GPU as the cuda backend.

What a PyTorch user writes for the same two jobs, timed the same way as
the Go benchmarks (react/cudadevice/bench_test.go): the median over --reps
runs, after --warmup, of the wall time of one call and of the GPU time
between two CUDA events around it (a span: for the solve it includes the
host waits inside the call); and for the correction of a batch already on
the GPU, the GPU time of the work alone (100 corrections queued back to
back between two events, divided by 100):

  solve  W_p for the equal preference over T tasks, from statistics already
         on the GPU in float64: the weighted sums A_p and C_p,
         torch.linalg.cholesky, torch.cholesky_solve, and W_p rounded to
         float32 for the correction; D in 512, 768, 1024, 1280 and T in 2,
         8, 20. (The cuda backend also estimates the condition number of
         C_p, which PyTorch has no routine for.)
  apply  the correction Z W_pᵀ of B rows at D = 768 and 1280 in float32
         (TF32 off, as cuBLAS's default): "resident", on a batch already on
         the GPU, and "host", from and back to (pageable) host memory.

Writes JSON to --out. The statistics are synthetic, as the Go benchmarks'
are: only their shapes and positive definiteness matter to the timings.
"""

import argparse
import json
import statistics
import time

import torch


def timed(fn, reps, warmup):
    """Median GPU span and wall milliseconds of one call of fn over reps runs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    gpu, wall = [], []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        end.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        gpu.append(start.elapsed_time(end))
    return statistics.median(gpu), statistics.median(wall)


def gpu_time(fn, reps=100):
    """GPU milliseconds of one of reps calls of fn queued back to back."""
    fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def statistics_on_gpu(d, tasks, gen):
    """A_t (random) and G_t (symmetric, strictly diagonally dominant)."""
    dev = torch.device("cuda")
    a = torch.randn(tasks, d, d, dtype=torch.float64, device=dev, generator=gen)
    off = (torch.rand(tasks, d, d, dtype=torch.float64, device=dev, generator=gen) - 0.5) / d
    g = (off + off.transpose(1, 2)) / 2
    g += torch.diag_embed(2 + torch.rand(tasks, d, dtype=torch.float64, device=dev, generator=gen))
    return a, g


def bench_solve(d, tasks, beta, reps, warmup, gen):
    a, g = statistics_on_gpu(d, tasks, gen)
    w = torch.full((tasks,), 1.0 / tasks, dtype=torch.float64, device="cuda")
    eye = torch.eye(d, dtype=torch.float64, device="cuda")

    def solve():
        ap = torch.tensordot(w, a, dims=1)
        cp = torch.tensordot(w, g, dims=1) + beta * w.sum() * eye
        factor = torch.linalg.cholesky(cp)
        x = torch.cholesky_solve(ap.T.contiguous(), factor)  # C_p X = A_pᵀ
        return x.T.to(torch.float32).contiguous()  # W_p

    span, wall = timed(solve, reps, warmup)
    return {"D": d, "T": tasks, "span_ms": span, "wall_ms": wall}


def bench_apply(rows, d, reps, warmup, gen):
    w = torch.randn(d, d, dtype=torch.float32, device="cuda", generator=gen)
    z = torch.randn(rows, d, dtype=torch.float32, device="cuda", generator=gen)
    z_host = z.cpu()
    dst = torch.empty_like(z)
    out = []
    resident = lambda: torch.matmul(z, w.T, out=dst)  # noqa: E731
    span, wall = timed(resident, reps, warmup)
    gpu = gpu_time(resident)
    out.append({"mode": "resident", "B": rows, "D": d, "gpu_ms": gpu, "span_ms": span, "wall_ms": wall})
    span, wall = timed(lambda: (z_host.cuda() @ w.T).cpu(), reps, warmup)
    out.append({"mode": "host", "B": rows, "D": d, "gpu_ms": None, "span_ms": span, "wall_ms": wall})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_torch: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(0)
    result = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "solve": [bench_solve(d, t, 0.1, args.reps, args.warmup, gen) for d in (512, 768, 1024, 1280) for t in (2, 8, 20)],
        "apply": [r for d in (768, 1280) for b in (1, 64, 256, 1024) for r in bench_apply(b, d, args.reps, args.warmup, gen)],
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"gpu_torch: {result['device']}, torch {result['torch']} (CUDA {result['cuda']}): {args.out}")


if __name__ == "__main__":
    main()
