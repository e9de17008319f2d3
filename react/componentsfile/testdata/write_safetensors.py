"""Writes safetensors files with numpy and Python's safetensors, for Go to read.

Usage: write_safetensors.py DIR

Writes DIR/generic.safetensors, tensors of several dtypes with metadata, and
DIR/components.safetensors, a complete components file (metadata contract and
both checksums included) built here, not by Go. Prints the values it wrote as
JSON.
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np
from safetensors.numpy import save_file


def data_sha256(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return hashlib.sha256(raw[8 + n:]).hexdigest()


def metadata_sha256(meta):
    """The metadata checksum, from docs/components-file.md: every entry but
    the two checksums, in byte-wise order of the UTF-8 keys, each encoded as
    <len(key)>:<key>,<len(value)>:<value>, with lengths in bytes."""
    enc = b""
    items = [(k.encode("utf-8"), v.encode("utf-8")) for k, v in meta.items()
             if k not in ("sha256", "metadata_sha256")]
    for k, v in sorted(items):
        enc += b"%d:%s,%d:%s," % (len(k), k, len(v), v)
    return hashlib.sha256(enc).hexdigest()


def main(out_dir):
    generic = {
        "x": np.arange(6, dtype=np.float64).reshape(2, 3) / 4.0,
        "y": np.array([1.5, -2.0, 1e-3], dtype=np.float32),
        "z": np.array([[1, -2], [3, 4]], dtype=np.int32),
        "empty": np.zeros((0, 5), dtype=np.float64),
    }
    save_file(generic, os.path.join(out_dir, "generic.safetensors"),
              metadata={"k": "v", "unicode": "\u00e9\u03b2"})

    d = 3
    rng = np.random.default_rng(5)
    tensors, meta = {}, {
        "format": "react-components", "format_version": "1", "d": str(d),
        "tasks": "p,q", "beta": "0.25", "normalization": "mean",
        "backbone.model": "merged", "backbone.version": "", "backbone.output": "feat",
        # Not a key Go writes: the checksum covers every entry, and a
        # multi-byte value checks that lengths count bytes.
        "note": "\u00e9\u03b2 ,1:x,",
    }
    values = {}
    for i, t in enumerate(("p", "q")):
        n = 20 + i
        x = rng.standard_normal((n, d))
        y = x @ rng.standard_normal((d, d)) + 0.1 * rng.standard_normal((n, d))
        s = y.T @ x
        g = x.T @ x
        g = (g + g.T) / 2
        u, _, vt = np.linalg.svd(s)
        w = u @ vt
        tensors.update({t + ".S": s, t + ".G": g, t + ".W_orth": w})
        meta.update({"task.%s.n" % t: str(n), "task.%s.expert" % t: "expert_" + t,
                     "task.%s.expert_version" % t: "", "task.%s.expert_output" % t: ""})
        values[t] = {"n": n, "S": s.tolist(), "G": g.tolist(), "W_orth": w.tolist()}
    path = os.path.join(out_dir, "components.safetensors")
    meta["metadata_sha256"] = metadata_sha256(meta)
    # The data checksum covers the data section only, so write once to learn
    # it.
    meta["sha256"] = "0" * 64
    save_file(tensors, path, metadata=meta)
    meta["sha256"] = data_sha256(path)
    save_file(tensors, path, metadata=meta)
    json.dump({"generic": {k: v.tolist() for k, v in generic.items()}, "components": values}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
