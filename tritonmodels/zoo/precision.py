"""Measures what --fp16-weights costs: test accuracy of backbones exported
with FP32 weights against the committed files (FP16-stored weights), and
how often their predictions differ.

Exports the chosen backbones again from the build's checkpoints
(WORK/<source>.pt) with FP32 weights into a temporary directory, runs both
with onnxruntime on every task's test split through the task's head, and
prints a Markdown table. Needs the zoo venv and a finished build.

Usage: ZOO_NAME=effnet python precision.py [--models backbone_ta,backbone_adamerging]
"""
import argparse
import json
import os
import tempfile
import warnings

import numpy as np

import common
import evaluate
import export


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="backbone_ta,backbone_ties,backbone_adamerging")
    args = ap.parse_args()
    common.setup(0)
    warnings.filterwarnings("ignore")
    with open(os.path.join(common.settings().zoo, "manifest.json")) as f:
        manifest = json.load(f)
    tasks = list(manifest["tasks"])
    lines = ["| backbone | " + " | ".join(tasks) + " | average | predictions that differ |",
             "|---|" + "---|" * (len(tasks) + 2)]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            entry = manifest["files"][name]
            module = common.load_backbone(entry["source"])
            example = common.load_split(tasks[0], "test")[0][:8]
            path32 = os.path.join(tmp, name + ".onnx")
            export.export(module, example, path32, "image", "feature", fp16_weights=False)
            acc = {"fp32": [], "fp16": []}
            differ, total = 0, 0
            for task in tasks:
                x, y = evaluate.load_test(task, common.settings().data)
                head = evaluate.session(manifest, f"head_{task}", common.settings().zoo)
                preds = {}
                for kind, sess in (("fp32", _session(path32)), ("fp16", evaluate.session(manifest, name, common.settings().zoo))):
                    preds[kind] = evaluate.run(head, evaluate.run(sess, x)).argmax(1)
                    acc[kind].append(float((preds[kind] == y).mean()))
                differ += int((preds["fp32"] != preds["fp16"]).sum())
                total += len(y)
            for kind in ("fp32", "fp16"):
                lines.append(f"| {name} {kind} weights | " + " | ".join(f"{100 * a:.1f}" for a in acc[kind]) +
                             f" | {100 * np.mean(acc[kind]):.2f} | " + (f"{differ} of {total}" if kind == "fp16" else "") + " |")
    print("\n".join(lines))


def _session(path):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(os.environ.get("ZOO_THREADS", "1"))
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


if __name__ == "__main__":
    main()
