"""The numpy/SciPy reference of bench/linalg.sh: what a Python user with
numpy and SciPy (OpenBLAS, as their wheels ship it) does for the same
operations, shapes and preferences as react/bench_test.go, timed on one
thread (run it with OPENBLAS_NUM_THREADS=1).

One JSON line per measurement, named like the Go benchmark it matches:
  Solve/D=*/T=*                     W_p = A_p C_p^-1: the weighted sums, cho_factor, cho_solve
  FirstRequest/D=*/T=8/factored     the sums, cho_factor, then one row: A_p (C_p^-1 z)
  FirstRequest/D=*/T=8/formed       the sums, W_p as in Solve, then one row: W_p z (float32)
  Correct/B=*/D=*                   Z @ W.T in float32
  Accumulate/D=*                    S += Zi.T @ Zm, G += Zm.T @ Zm in float64, 256 rows
  Peak/DGEMM/n=2048, Peak/SGEMM/n=2048

Usage: OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/linalg_numpy.py [--quick]
"""
import json
import sys
import time

import numpy as np
import scipy
import scipy.linalg as sl

QUICK = "--quick" in sys.argv


def mean_time(f, n, warmup=1):
    for _ in range(warmup):
        f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n


def emit(name, seconds, **extra):
    print(json.dumps({"name": name, "ns_per_op": seconds * 1e9, **extra}), flush=True)


def stats(d, t, rng):
    """T tasks of A_t and C_t: a random A, a diagonally dominant symmetric C
    (the shapes of react's benchComponents; only they matter for timing)."""
    a = [rng.standard_normal((d, d)) for _ in range(t)]
    c = []
    for _ in range(t):
        g = np.triu(rng.random((d, d)) - 0.5)
        g = g + np.triu(g, 1).T
        g[np.diag_indices(d)] = d
        c.append(g)
    return a, c


def weighted(ms, p):
    out = p[0] * ms[0]
    for w, m in zip(p[1:], ms[1:]):
        out += w * m
    return out


def solve(a, c, p):
    ap, cp = weighted(a, p), weighted(c, p)
    fac = sl.cho_factor(cp, check_finite=False)
    return ap, fac, sl.cho_solve(fac, ap.T, check_finite=False).T


def main():
    rng = np.random.default_rng(1)
    info = {"numpy": np.__version__, "scipy": scipy.__version__}
    try:
        cfg = np.show_config(mode="dicts")
        info["blas"] = cfg["Build Dependencies"]["blas"].get("version", "")
    except Exception:  # older numpy
        pass
    print(json.dumps({"info": info}), flush=True)
    reps = 2 if QUICK else 5
    for d in (512, 768, 1024):
        a, c = stats(d, 20, rng)
        for t in (2, 8, 20):
            p = np.full(t, 1 / t)
            emit(f"Solve/D={d}/T={t}", mean_time(lambda: solve(a[:t], c[:t], p), reps))
        if d == 1024:
            continue
        p = np.full(8, 1 / 8)
        z = rng.standard_normal(d).astype(np.float32)

        def factored():
            ap, cp = weighted(a[:8], p), weighted(c[:8], p)
            fac = sl.cho_factor(cp, check_finite=False)
            return (ap @ sl.cho_solve(fac, z.astype(np.float64), check_finite=False)).astype(np.float32)

        def formed():
            _, _, w = solve(a[:8], c[:8], p)
            return w.astype(np.float32) @ z

        emit(f"FirstRequest/D={d}/T=8/factored", mean_time(factored, reps))
        emit(f"FirstRequest/D={d}/T=8/formed", mean_time(formed, reps))
        w32 = rng.standard_normal((d, d)).astype(np.float32)
        for b in (1, 64, 256):
            zb = rng.standard_normal((b, d)).astype(np.float32)
            sec = mean_time(lambda: zb @ w32.T, 50 if QUICK else 400)
            emit(f"Correct/B={b}/D={d}", sec, rows_per_s=b / sec)
        zm = rng.standard_normal((256, d)).astype(np.float32)
        zi = rng.standard_normal((256, d)).astype(np.float32)
        s_acc, g_acc = np.zeros((d, d)), np.zeros((d, d))

        def accumulate():
            m64, i64 = zm.astype(np.float64), zi.astype(np.float64)
            s_acc.__iadd__(i64.T @ m64)
            g_acc.__iadd__(m64.T @ m64)

        sec = mean_time(accumulate, 10 if QUICK else 40)
        emit(f"Accumulate/D={d}", sec, rows_per_s=256 / sec)
    n = 2048
    x64 = rng.standard_normal((n, n))
    x32 = x64.astype(np.float32)
    sec = mean_time(lambda: x64 @ x64.T, 2 if QUICK else 3)
    emit("Peak/DGEMM/n=2048", sec, gflops=2 * n**3 / sec / 1e9)
    sec = mean_time(lambda: x32 @ x32.T, 2 if QUICK else 3)
    emit("Peak/SGEMM/n=2048", sec, gflops=2 * n**3 / sec / 1e9)


if __name__ == "__main__":
    main()
