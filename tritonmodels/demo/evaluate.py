"""Test accuracy of the zoo on Triton, without and with the ReACT correction.

For every task t of the zoo, on its labelled test split, through the official
tritonclient (gRPC) against a Triton serving tritonmodels/repo:

  Individual   expert_t -> head_t
  Merged       backbone_adamerging -> head_t, no correction
  ReACT        z = backbone_adamerging(x), z_hat = W_p z (numpy), head_t(z_hat)

where each W_p.npy was written by `calibrate solve` for one preference p. The
plan file lists them, one per line, tab-separated: a label of the setting
(e.g. "sum β=0.1"), the preference, and the W.npy path.

Metrics (DESIGN.md §1, paper appendix A.3), computed here in numpy:
  normalised accuracy  a_t = acc_t / acc_Individual_t
  HV   hypervolume of the normalised-accuracy points of a setting's
       preferences, reference point the origin, exact by inclusion-exclusion
       over subsets of the non-dominated points (fine for a few dozen)
  U    1 - KL(s_hat || uniform), s_hat_t = p_t (1 - a_t) / sum_i p_i (1 - a_i),
       with the shortfall 1 - a_t clamped at 0 (as react.Uniformity does),
       over the tasks the preference weighs (a task of weight 0 would count
       as misaligned whatever its accuracy, like the paper's U@3 on a
       subspace); averaged over the preferences that weigh two tasks or more,
       since on one task U is 1 whatever the accuracy.
Both were checked against react.Hypervolume and react.Uniformity on random
points: the same to 1e-12.
The Merged backbone answers every preference the same way: its HV is that of
its one point, and its U is averaged over the same preferences.

Usage: python evaluate.py --triton HOST:PORT --data .cache/zoo-data --plan PLAN [--markdown FILE] [--json FILE]
"""
import argparse
import itertools
import json
import math
import pathlib
import sys

import numpy as np
import tritonclient.grpc as grpcclient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from export_calib import MANIFEST, images  # noqa: E402

BACKBONE = "backbone_adamerging"
IMAGE = MANIFEST["backbone"]["input"]["name"]
FEATURE = MANIFEST["backbone"]["output"]["name"]
LOGITS = MANIFEST["head"]["output"]
BATCH = 256  # the zoo models' max_batch_size


def infer(client, model, name, output, x):
    """Runs x through a model in batches and returns the output."""
    out = []
    for i in range(0, len(x), BATCH):
        part = np.ascontiguousarray(x[i:i + BATCH], dtype=np.float32)
        tensor = grpcclient.InferInput(name, list(part.shape), "FP32")
        tensor.set_data_from_numpy(part)
        result = client.infer(model, [tensor], outputs=[grpcclient.InferRequestedOutput(output)])
        out.append(result.as_numpy(output))
    return np.concatenate(out)


def accuracy(client, task, z, y):
    logits = infer(client, f"head_{task}", FEATURE, LOGITS, z)
    return float((logits.argmax(1) == y).mean())


def parse_preference(spec, tasks):
    """task=weight,... as a normalised weight vector over tasks (calibrate solve checked it)."""
    w = dict.fromkeys(tasks, 0.0)
    for item in spec.split(","):
        task, value = item.split("=")
        w[task] = float(value)
    total = sum(w.values())
    return np.array([w[t] / total for t in tasks])


def describe(p, tasks):
    """A short name for a preference vector: task=1, uniform, priority, or its weights."""
    nz = [t for t, w in zip(tasks, p) if w > 0]
    if len(nz) == 1:
        return f"{nz[0]}=1"
    if np.allclose(p, p[0]):
        return "uniform"
    top = int(np.argmax(p))
    rest = np.delete(p, top)
    if rest.min() > 0 and np.allclose(rest, rest[0]):
        return f"{tasks[top]}={p[top]:.2g}, others {rest[0]:.2g}"
    return ",".join(f"{t}={w:.2g}" for t, w in zip(tasks, p) if w > 0)


def hypervolume(points):
    """Volume dominated by points (maximisation) above the origin."""
    pts = [np.maximum(np.asarray(p, float), 0) for p in points]
    front = [p for i, p in enumerate(pts)
             if not any(np.all(q >= p) and (np.any(q > p) or j < i) for j, q in enumerate(pts) if j != i)]
    total = 0.0
    for k in range(1, len(front) + 1):
        for subset in itertools.combinations(front, k):
            total += (-1) ** (k + 1) * float(np.prod(np.min(subset, axis=0)))
    return total


def uniformity(a, p):
    s = p * np.maximum(0.0, 1 - np.asarray(a))
    if s.sum() == 0:
        return 1.0
    s = s / s.sum()
    nz = s > 0
    return 1 - float(np.sum(s[nz] * np.log(len(s) * s[nz])))


def row(label, pref, acc, expert, tasks):
    a = [acc[t] / expert[t] for t in tasks]
    cells = " | ".join(f"{100 * acc[t]:.1f}" for t in tasks)
    return f"| {label} | {pref} | {cells} | {100 * np.mean([acc[t] for t in tasks]):.1f} | {100 * np.mean(a):.1f} |"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triton", required=True, help="Triton's gRPC HOST:PORT")
    ap.add_argument("--data", required=True, help="the zoo data directory (scripts/zoo-data.sh)")
    ap.add_argument("--plan", required=True, help="tab-separated lines: setting, preference, W.npy")
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--json", help="also write every accuracy to this file")
    args = ap.parse_args()

    tasks = list(MANIFEST["tasks"])
    plan = [line.rstrip("\n").split("\t") for line in open(args.plan) if line.strip()]
    client = grpcclient.InferenceServerClient(url=args.triton)

    expert, merged, z, labels = {}, {}, {}, {}
    for task in tasks:
        x, labels[task] = images(args.data, task, "test")
        z_ind = infer(client, f"expert_{task}", IMAGE, FEATURE, x)
        expert[task] = accuracy(client, task, z_ind, labels[task])
        z[task] = infer(client, BACKBONE, IMAGE, FEATURE, x)
        merged[task] = accuracy(client, task, z[task], labels[task])

    results = []  # (setting, preference, p, acc)
    for setting, spec, path in plan:
        W = np.load(path).astype(np.float64)
        acc = {t: accuracy(client, t, (z[t] @ W.T).astype(np.float32), labels[t]) for t in tasks}
        results.append((setting, spec, parse_preference(spec, tasks), acc))

    header = "| model | preference | " + " | ".join(tasks) + " | average | normalised |"
    lines = ["Test accuracy (%) per task; normalised = mean of accuracy / Individual accuracy.", "",
             header, "|" + "---|" * (len(tasks) + 4),
             row("Individual", "(expert_t → head_t)", expert, expert, tasks),
             row("Merged", "(AdaMerging, no correction)", merged, expert, tasks)]
    settings = list(dict.fromkeys(r[0] for r in results))
    for setting in settings:
        mine = [r for r in results if r[0] == setting]
        own = {t: r[3][t] for r in mine for t in tasks if r[2][tasks.index(t)] == 1}
        if len(own) == len(tasks):
            lines.append(row(f"ReACT {setting}", "one-hot, each task at its own", own, expert, tasks))
        for _, _, p, acc in mine:
            lines.append(row(f"ReACT {setting}", describe(p, tasks), acc, expert, tasks))

    def sweep(points, prefs):
        interior = [(a, p) for a, p in zip(points, prefs) if np.count_nonzero(p) >= 2]
        u = np.mean([uniformity(np.asarray(a)[p > 0], p[p > 0]) for a, p in interior]) if interior else math.nan
        # DESIGN §1's formula taken literally, over all T tasks: zero-weight
        # tasks still count in log(T ŝ_t), so a preference over k < T tasks
        # scores at most 1 − log(T/k).
        u_all = np.mean([uniformity(a, p) for a, p in interior]) if interior else math.nan
        return hypervolume(points), u, u_all, len(points), len(interior)

    lines += ["", f"Preference sweep over the {len(tasks)} tasks, on normalised accuracies: "
              "HV over every preference of a setting (origin as reference), "
              "U over the tasks each preference weighs (as the paper's U@3 on a 3-task subspace), "
              "and U (all T) over all the tasks (DESIGN §1's formula as written), "
              "both averaged over the preferences that weigh two tasks or more.", "",
              "| model | HV | U | U (all T) | preferences (for U) |", "|---|---|---|---|---|"]
    a_merged = [merged[t] / expert[t] for t in tasks]
    for setting in settings:
        mine = [r for r in results if r[0] == setting]
        points = [[r[3][t] / expert[t] for t in tasks] for r in mine]
        prefs = [r[2] for r in mine]
        if setting == settings[0]:
            hv, u, u_all, n, ni = sweep([a_merged] * len(prefs), prefs)
            lines.append(f"| Merged (AdaMerging) | {hv:.4f} | {u:.4f} | {u_all:.4f} | {n} ({ni}) |")
        hv, u, u_all, n, ni = sweep(points, prefs)
        lines.append(f"| ReACT {setting} | {hv:.4f} | {u:.4f} | {u_all:.4f} | {n} ({ni}) |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"individual": expert, "merged": merged,
                       "react": [{"setting": s, "preference": p, "accuracy": a} for s, p, _, a in results]}, f, indent=1)


if __name__ == "__main__":
    main()
