"""Export every backbone and head to ONNX and write the manifest.

Files (in tritonmodels/zoo/onnx/):
  backbone_base.onnx, backbone_ta.onnx, backbone_ties.onnx,
  backbone_adamerging.onnx, expert_<task>.onnx   image [N,1,28,28] -> feature [N,D]
  head_<task>.onnx                               feature [N,D] -> logits [N,C]

Each file is checked against PyTorch with onnxruntime on test images before
the manifest (tritonmodels/zoo/manifest.json) records it with its sha256.

With --fp16-weights (the effnet zoo) every large float32 weight is stored as
float16 and widened by a Cast node when the session starts (onnxruntime
folds it): half the bytes, float32 arithmetic, the weights rounded to
float16. The manifest records each file's largest absolute and relative
difference from PyTorch.
"""
import argparse
import hashlib
import warnings
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch

import common
from onnx import helper, numpy_helper
from vit import HEAD_SCALE

OPSET = 17  # torch 1.13's newest; onnxruntime >= 1.14 and Triton 24.10 run it


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# Float32 initializers with at least this many elements are stored in FP16
# by --fp16-weights (BatchNorm vectors and biases stay float32).
FP16_MIN_ELEMENTS = 1024


def halve_weights(path):
    """Rewrites the ONNX file at path with its large float32 initializers
    stored as float16, each widened back by a Cast node at the graph's start."""
    model = onnx.load(path)
    graph = model.graph
    casts, kept = [], []
    for init in graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or np.prod(init.dims) < FP16_MIN_ELEMENTS:
            kept.append(init)
            continue
        half = numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name + "_fp16")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=onnx.TensorProto.FLOAT,
                                      name=init.name + "_widen"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, path)


# How far onnxruntime may be from PyTorch: in absolute terms for float32
# weights; with --fp16-weights, as the relative Frobenius norm of the
# difference (the rounding happens after ONNX export folds BatchNorm into the
# convolutions, so no rounded PyTorch model reproduces it exactly; measured
# 0.2% on EfficientNet-Lite0).
MAX_ABS_ERR = 1e-3
MAX_REL_ERR_FP16 = 1e-2


def export(module, example, path, in_name, out_name, fp16_weights=False):
    """Exports module, checks onnxruntime against PyTorch, and returns the
    largest absolute difference and the relative (Frobenius) one."""
    torch.onnx.export(module, example, path, input_names=[in_name], output_names=[out_name],
                      dynamic_axes={in_name: {0: "batch"}, out_name: {0: "batch"}},
                      opset_version=OPSET, do_constant_folding=True)
    if fp16_weights:
        halve_weights(path)
    onnx.checker.check_model(onnx.load(path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    err, rel = 0.0, 0.0
    for rows in (example, example[:3], example[:1]):  # the batch axis must stay dynamic
        got = sess.run(None, {in_name: rows.numpy()})[0]
        with torch.no_grad():
            want = module(rows).numpy()
        err = max(err, float(np.abs(got - want).max()))
        rel = max(rel, float(np.linalg.norm(got - want) / np.linalg.norm(want)))
    if (fp16_weights and rel > MAX_REL_ERR_FP16) or (not fp16_weights and err > MAX_ABS_ERR):
        raise SystemExit(f"export: {path}: onnxruntime differs from torch by {err} (relative {rel})")
    return err, rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(common.settings().zoo, "onnx"))
    ap.add_argument("--fp16-weights", action="store_true",
                    help="store the backbones' large weights in FP16 (computing in FP32)")
    args = ap.parse_args()
    common.setup(0)
    warnings.filterwarnings("ignore")  # tracer warnings about shapes; checked below
    os.makedirs(args.out, exist_ok=True)

    with common.Timer("export"):
        tasks = common.TASKS
        images = torch.cat([common.load_split(t, "test")[0][:8] for t in tasks])
        backbones = {"backbone_base": "base"}
        backbones.update({f"backbone_{m}": f"merged/{m}" for m in common.MERGES})
        backbones.update({f"expert_{t}": f"expert/{t}" for t in tasks})
        files = {}
        for name, src in backbones.items():
            path = os.path.join(args.out, name + ".onnx")
            err, rel = export(common.load_backbone(src), images, path, "image", "feature", args.fp16_weights)
            files[name] = {"kind": "backbone", "source": src, "max_abs_err": err}
            if args.fp16_weights:
                files[name]["rel_err"] = rel
        for t in tasks:
            head = common.load_head(t)
            z = common.features(common.load_backbone(f"expert/{t}"), images)
            path = os.path.join(args.out, f"head_{t}.onnx")
            err, _ = export(head, z, path, "feature", "logits")
            files[f"head_{t}"] = {"kind": "head", "task": t, "max_abs_err": err}
        for name, entry in files.items():
            path = os.path.join(args.out, name + ".onnx")
            entry["path"] = os.path.relpath(path, os.path.dirname(args.out))
            entry["sha256"] = sha256(path)
            entry["bytes"] = os.path.getsize(path)

        with open(os.path.join(common.settings().work, "merged", "settings.json")) as f:
            merges = json.load(f)
        task_info = {}
        for t in tasks:
            with open(os.path.join(common.settings().data, t, "classes.json")) as f:
                meta = json.load(f)
            task_info[t] = {"classes": meta["classes"], "num_classes": len(meta["classes"]),
                            "source": meta["source"], "sizes": meta["sizes"]}
        config = common.architecture().CONFIG
        manifest = {
            "format": 1,
            "D": config["dim"],
            "backbone": {"config": config, "weights_fp16": args.fp16_weights, "input": {"name": "image", "dtype": "float32",
                                                    "shape": [-1, 1, 28, 28], "range": [0, 1]},
                         "output": {"name": "feature", "dtype": "float32", "shape": [-1, config["dim"]]}},
            "head": {"input": "feature", "output": "logits", "scale": HEAD_SCALE,
                     "form": "scale * normalize(feature) @ normalize(W)^T"},
            "opset": OPSET,
            "built_with": {"torch": torch.__version__, "onnx": onnx.__version__,
                           "onnxruntime": ort.__version__, "numpy": np.__version__},
            "tasks": task_info,
            "merges": merges,
            "files": files,
        }
        with open(os.path.join(os.path.dirname(args.out), "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, ensure_ascii=False)
        total = sum(e["bytes"] for e in files.values())
        print(f"export: {len(files)} files, {total / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
