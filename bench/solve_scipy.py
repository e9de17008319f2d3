"""What `calibrate solve` does, as a Python user would write it with
safetensors, numpy and SciPy: read a components file, form A_t = S_t + β
W_orth_t and C_t = G_t + β I (sum normalisation), W_p = A_p C_p^-1 for the
preference by cho_factor/cho_solve, and write it as a float32 .npy.

Usage: python bench/solve_scipy.py COMPONENTS PREFERENCE OUT.npy
  (PREFERENCE as task=weight,...; β is the file's)
"""
import sys

import numpy as np
import scipy.linalg as sl
from safetensors import safe_open


def main():
    path, spec, out = sys.argv[1:4]
    with safe_open(path, "np") as f:
        meta = f.metadata()
        beta = float(meta["beta"])
        weights = {}
        for item in spec.split(","):
            task, w = item.split("=")
            weights[task] = float(w)
        total = sum(weights.values())
        ap = cp = None
        for task, w in weights.items():
            p = w / total
            s, g, worth = f.get_tensor(f"{task}.S"), f.get_tensor(f"{task}.G"), f.get_tensor(f"{task}.W_orth")
            a = s + beta * worth
            c = g + beta * np.eye(len(g))
            ap = p * a if ap is None else ap + p * a
            cp = p * c if cp is None else cp + p * c
    w = sl.cho_solve(sl.cho_factor(cp, check_finite=False), ap.T, check_finite=False).T
    np.save(out, w.astype(np.float32))


if __name__ == "__main__":
    main()
