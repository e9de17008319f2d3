"""Evaluate the exported ONNX zoo on each task's test split.

Runs the committed ONNX files with onnxruntime (not PyTorch), after checking
their sha256 against manifest.json, and reports test accuracy per task for:
  Individual   expert_<task> -> head_<task>
  Base         backbone_base -> head_<task>
  TA, TIES, AdaMerging   backbone_<merge> -> head_<task>
Writes tritonmodels/zoo/results.json and replaces the table between the
markers in tritonmodels/README.md. With --check it writes nothing and fails
if either differs from a fresh evaluation (CI runs this, so the table cannot
drift from the models).

Needs only numpy and onnxruntime (no torch), so the project's .venv runs it.

Usage: python3 evaluate.py [--check-only | --check]
"""
import argparse
import hashlib
import json
import os
import time

import numpy as np
import onnxruntime as ort

from zooenv import ROOT, settings

BEGIN, END = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"
ROWS = [("Individual", "expert_{task}"), ("Base", "backbone_base"), ("TA", "backbone_ta"),
        ("TIES", "backbone_ties"), ("AdaMerging", "backbone_adamerging")]


def check_hashes(manifest, zoo):
    bad = []
    for name, entry in manifest["files"].items():
        with open(os.path.join(zoo, entry["path"]), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != entry["sha256"]:
                bad.append(name)
    if bad:
        raise SystemExit(f"evaluate: sha256 differs from manifest.json: {', '.join(bad)}")


def session(manifest, name, zoo):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    path = os.path.join(zoo, manifest["files"][name]["path"])
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def load_test(task, data):
    """Test images as float32 [N,1,28,28] in [0,1] (as the backbones expect), labels."""
    with np.load(os.path.join(data, task, "test.npz")) as f:
        return (f["x"].astype(np.float32) / 255)[:, None], f["y"]


def run(sess, x, batch=1000):
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + batch]})[0] for i in range(0, len(x), batch)])


def table(acc, tasks):
    head = "| model | " + " | ".join(tasks) + " | average | normalised |"
    lines = [head, "|" + "---|" * (len(tasks) + 3)]
    for row, _ in ROWS:
        vals = [acc[row][t] for t in tasks]
        norm = np.mean([acc[row][t] / acc["Individual"][t] for t in tasks])
        lines.append(f"| {row} | " + " | ".join(f"{100 * v:.1f}" for v in vals) +
                     f" | {100 * np.mean(vals):.1f} | {100 * norm:.1f} |")
    return "\n".join(lines)


def evaluate(manifest, cfg):
    """Test accuracy per row and task."""
    tasks = list(manifest["tasks"])
    acc = {row: {} for row, _ in ROWS}
    sizes = {}
    for task in tasks:
        x, y = load_test(task, cfg.data)
        sizes[task] = len(y)
        head = session(manifest, f"head_{task}", cfg.zoo)
        for row, model in ROWS:
            z = run(session(manifest, model.format(task=task), cfg.zoo), x)
            pred = run(head, z).argmax(1)
            acc[row][task] = float((pred == y).mean())
    merges = manifest["merges"]
    return {"test_sizes": sizes, "accuracy": acc,
            "merges": {"ta": {"lambda": merges["ta"]["lambda"]},
                       "ties": {"k": merges["ties"]["k"], "lambda": merges["ties"]["lambda"]},
                       "adamerging": {k: merges["adamerging"][k]
                                      for k in ("init", "steps", "batch_per_task", "lr")}}}


def readme_with_table(results, md, readme):
    """README.md's text with the table between the markers replaced."""
    with open(readme) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"evaluate: {readme} lacks the {BEGIN} ... {END} markers")
    m = results["merges"]
    note = (f"Test accuracy (%) per task, from `tritonmodels/zoo/evaluate.py` running the ONNX files "
            f"with onnxruntime. Normalised = mean of accuracy / Individual accuracy. "
            f"TA lambda={m['ta']['lambda']}, TIES k={m['ties']['k']} lambda={m['ties']['lambda']}, "
            f"layer-wise AdaMerging {m['adamerging']['steps']} steps from lambda={m['adamerging']['init']}.")
    pre, rest = text.split(BEGIN, 1)
    post = rest.split(END, 1)[1]
    return pre + BEGIN + "\n" + note + "\n\n" + md + "\n" + END + post


def check(results, md, cfg):
    """Fail unless results.json and README.md hold exactly this evaluation."""
    with open(os.path.join(cfg.zoo, "results.json")) as f:
        committed = json.load(f)
    problems = []
    if committed != results:
        problems.append(f"{os.path.relpath(cfg.zoo, ROOT)}/results.json differs from a fresh evaluation")
    with open(cfg.readme) as f:
        if f.read() != readme_with_table(results, md, cfg.readme):
            problems.append(f"the table in {os.path.relpath(cfg.readme, ROOT)} differs from a fresh evaluation")
    if problems:
        raise SystemExit("evaluate --check: " + "; ".join(problems) +
                         " (run tritonmodels/zoo/evaluate.py and commit the result)")
    print("evaluate --check: results.json and the README table match a fresh evaluation")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check-only", action="store_true", help="only check the sha256 sums")
    ap.add_argument("--check", action="store_true",
                    help="evaluate, write nothing, and fail if results.json or the README table differ")
    args = ap.parse_args()
    cfg = settings()
    with open(os.path.join(cfg.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    check_hashes(manifest, cfg.zoo)
    if args.check_only:
        print(f"evaluate: {len(manifest['files'])} files match manifest.json")
        return

    t0 = time.time()
    results = evaluate(manifest, cfg)
    md = table(results["accuracy"], list(manifest["tasks"]))
    if args.check:
        check(results, md, cfg)
        return
    print(md)
    with open(os.path.join(cfg.zoo, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    if os.path.abspath(cfg.zoo) == os.path.abspath(cfg.zoo_default):  # not an experiment
        text = readme_with_table(results, md, cfg.readme)
        with open(cfg.readme, "w") as f:
            f.write(text)
    print(f"evaluate: {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
