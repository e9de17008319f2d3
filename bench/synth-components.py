"""Synthetic calibration features for the sidecar's controllable-path benchmark.

    .venv/bin/python bench/synth-components.py DIR [--tasks 8] [--rows 1024] [--dim 768] [--seed 7]

Writes DIR/<task>.merged.npy and DIR/<task>.expert.npy for tasks t0, t1, ...
(N x D float32, C order, row i of both files from the same sample), the input
of `calibrate fit --embeddings DIR`. Deterministic for a given seed.

The merged features are standard normal rows passed through a fixed random
mixing with a decaying spectrum (so the Gram matrix is full rank but not
white, like a real backbone's features). Task t's expert features are a
task-specific linear distortion of them plus noise:

    expert = merged @ A_t.T + 0.05 * noise,   A_t = I + 0.25 * R_t / sqrt(D)

with R_t standard normal: A_t's singular values stay within about [0.5, 1.5],
so the least-squares map from merged to expert features (what W_p solves for)
is well conditioned, and differs from task to task.
"""

import argparse
import pathlib

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path, help="directory to write the .npy files to")
    parser.add_argument("--tasks", type=int, default=8, help="number of tasks, named t0, t1, ... (default 8)")
    parser.add_argument("--rows", type=int, default=1024, help="samples per task, N (default 1024)")
    parser.add_argument("--dim", type=int, default=768, help="feature width, D (default 768)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    args = parser.parse_args()
    if args.tasks < 1 or args.rows < 1 or args.dim < 1:
        parser.error("--tasks, --rows and --dim must be positive")

    rng = np.random.default_rng(args.seed)
    d = args.dim
    # A fixed mixing with singular values decaying from 1 to 0.1.
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    mixing = q * np.geomspace(1.0, 0.1, d)

    args.out.mkdir(parents=True, exist_ok=True)
    for t in range(args.tasks):
        merged = rng.standard_normal((args.rows, d)) @ mixing.T
        distortion = np.eye(d) + 0.25 * rng.standard_normal((d, d)) / np.sqrt(d)
        expert = merged @ distortion.T + 0.05 * rng.standard_normal((args.rows, d)) * merged.std()
        np.save(args.out / f"t{t}.merged.npy", np.ascontiguousarray(merged, dtype=np.float32))
        np.save(args.out / f"t{t}.expert.npy", np.ascontiguousarray(expert, dtype=np.float32))
    print(f"synth-components: {args.tasks} tasks, {args.rows} x {d} float32 each, in {args.out}")


if __name__ == "__main__":
    main()
