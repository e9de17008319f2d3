"""Reads a components file written by Go, with numpy and Python's safetensors.

Usage: read_components.py FILE

Checks the metadata contract and both checksums (each computed here
independently of Go), recomputes for each task the
orthogonality error of W_orth, the asymmetry of G and the single-task
correction W_hat = (S + beta W_orth)(G + beta I)^-1, and prints them as JSON
for the Go test to compare with its own computation.
"""
import hashlib
import json
import struct
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file


def metadata_sha256(meta):
    """The metadata checksum, from docs/components-file.md: every entry but
    the two checksums, in byte-wise order of the UTF-8 keys, each encoded as
    <len(key)>:<key>,<len(value)>:<value>, with lengths in bytes."""
    h = hashlib.sha256()
    keys = sorted((k for k in meta if k not in ("sha256", "metadata_sha256")),
                  key=lambda k: k.encode("utf-8"))
    for k in keys:
        kb, vb = k.encode("utf-8"), meta[k].encode("utf-8")
        h.update(str(len(kb)).encode() + b":" + kb + b"," + str(len(vb)).encode() + b":" + vb + b",")
    return h.hexdigest()


def main(path):
    tensors = load_file(path)
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0, "data section is not 8-byte aligned"
    sha_ok = hashlib.sha256(raw[8 + n:]).hexdigest() == meta["sha256"]
    meta_sha_ok = metadata_sha256(meta) == meta["metadata_sha256"]

    assert meta["format"] == "react-components", meta["format"]
    assert meta["format_version"] == "1", meta["format_version"]
    d = int(meta["d"])
    beta = float(meta["beta"])
    assert meta["normalization"] in ("sum", "mean")
    tasks = meta["tasks"].split(",")
    assert len(tensors) == 3 * len(tasks), sorted(tensors)

    out = {"sha256_ok": sha_ok, "metadata_sha256_ok": meta_sha_ok, "d": d, "beta": beta, "tasks": {}}
    for t in tasks:
        s, g, w = tensors[t + ".S"], tensors[t + ".G"], tensors[t + ".W_orth"]
        for name, m in (("S", s), ("G", g), ("W_orth", w)):
            assert m.shape == (d, d), (t, name, m.shape)
            assert m.dtype == np.float64, (t, name, m.dtype)
        n_t = int(meta["task.%s.n" % t])
        if meta["normalization"] == "mean":
            s, g = s / n_t, g / n_t
        a = s + beta * w
        c = g + beta * np.eye(d)
        # W C = A  <=>  C^T W^T = A^T; C is symmetric.
        w_hat = np.linalg.solve(c, a.T).T
        out["tasks"][t] = {
            "n": n_t,
            "expert": meta["task.%s.expert" % t],
            "orth_err": float(np.abs(w.T @ w - np.eye(d)).max()),
            "sym_err": float(np.abs(g - g.T).max()),
            "w_hat": w_hat.tolist(),
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
