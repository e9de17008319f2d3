"""Test accuracy of the zoo through the ReACT sidecar, without and with the
correction, for one or more merged backbones.

For every task t of the zoo, on its labelled test split, through the official
tritonclient (gRPC):

  Individual   expert_t -> head_t, on Triton directly (no correction: the
               accuracy each task's own expert reaches)
  Merged       the controllable model of task t through the sidecar with
               the header react-preference: none (the uncorrected backbone)
  ReACT p      the same model with the header react-preference: p; the
               sidecar calls the backbone, applies W_p and calls head_t

The controllable models are those of tritonmodels/zoo/sidecar.yaml: for the
AdaMerging backbone the zoo's ensembles under their own names (fashion, ...),
for Task Arithmetic <task>_ta. Each preference p is evaluated on every task,
so that each gives a point of normalised accuracies: one-hot (task=1),
priority (task=5, every other task 1, i.e. 0.5 and 0.1 each) and uniform.

Metrics (paper, appendix A.3), in numpy:
  normalised accuracy  a_t = acc_t / acc_Individual_t
  HV   hypervolume of a setting's normalised-accuracy points, reference point
       the origin, exact by inclusion-exclusion over subsets of the
       non-dominated points (fine for a few dozen)
  U    1 - KL(s_hat || uniform), s_hat_t = p_t (1 - a_t) / sum_i p_i (1 - a_i),
       with the shortfall 1 - a_t clamped at 0 (as evaluate.Uniformity does),
       over the tasks the preference weighs ("U@k") and over all T tasks,
       averaged over the preferences that weigh two tasks or more.
Both match evaluate.Hypervolume and evaluate.Uniformity (checked on random points
to 1e-12). The Merged backbone answers every preference alike: its HV is that
of its one point, its U is averaged over the same preferences.

A preference "beats" the merged backbone when its p-weighted accuracy,
sum_t p_t acc_t, exceeds the merged backbone's. --check fails, for any
backbone, unless every one-hot preference and the uniform one beat it, and
the priority preferences beat it on average; a single priority preference
that does not is reported, not failed (on this zoo's TA backbone,
fashion=0.5 falls 0.6 points short: docs/demo-results.md).

Usage: python evaluate.py --sidecar HOST:PORT --triton HOST:PORT --data DIR
           [--backbones adamerging,ta] [--limit N] [--markdown FILE] [--json FILE] [--check]
"""
import argparse
import concurrent.futures
import itertools
import json
import math
import pathlib
import sys

import numpy as np
import tritonclient.grpc as grpcclient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from export_calib import MANIFEST, images  # noqa: E402

IMAGE = MANIFEST["backbone"]["input"]["name"]
FEATURE = MANIFEST["backbone"]["output"]["name"]
LOGITS = MANIFEST["head"]["output"]
BATCH = 256  # the zoo models' max_batch_size
# The controllable model of task t for each backbone (tritonmodels/zoo/sidecar.yaml).
MODELS = {"adamerging": ("AdaMerging", "{task}"), "ta": ("TA", "{task}_ta")}


def infer(client, model, name, output, x, headers=None, workers=4):
    """Runs x through a model in batches, several in flight, and returns the output."""
    def one(i):
        part = np.ascontiguousarray(x[i:i + BATCH], dtype=np.float32)
        tensor = grpcclient.InferInput(name, list(part.shape), "FP32")
        tensor.set_data_from_numpy(part)
        result = client.infer(model, [tensor], outputs=[grpcclient.InferRequestedOutput(output)], headers=headers)
        return result.as_numpy(output)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return np.concatenate(list(pool.map(one, range(0, len(x), BATCH))))


def preferences(tasks):
    """(label, spec, weight vector): one-hot, priority and uniform."""
    out = []
    for t in tasks:
        out.append((f"{t}=1", f"{t}=1", np.array([1.0 if u == t else 0.0 for u in tasks])))
    for t in tasks:
        w = np.array([5.0 if u == t else 1.0 for u in tasks])
        out.append((f"{t}=0.5, others 0.1", ",".join(f"{u}={v:g}" for u, v in zip(tasks, w)), w / w.sum()))
    out.append(("uniform", ",".join(f"{u}=1" for u in tasks), np.full(len(tasks), 1 / len(tasks))))
    return out


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
    ap.add_argument("--sidecar", required=True, help="the sidecar's gRPC HOST:PORT")
    ap.add_argument("--triton", required=True, help="Triton's gRPC HOST:PORT (for the experts)")
    ap.add_argument("--data", required=True, help="the zoo data directory (scripts/zoo-data.sh)")
    ap.add_argument("--backbones", default="adamerging,ta", help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--limit", type=int, help="a seeded random sample of at most N test images per task")
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--json", help="also write every accuracy to this file")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every preference beats the merged backbone")
    args = ap.parse_args()

    tasks = list(MANIFEST["tasks"])
    sidecar = grpcclient.InferenceServerClient(url=args.sidecar)
    triton = grpcclient.InferenceServerClient(url=args.triton)
    data = {}
    for task in tasks:
        x, y = images(args.data, task, "test")
        if args.limit and len(x) > args.limit:
            keep = np.sort(np.random.default_rng(0).choice(len(x), args.limit, replace=False))
            x, y = x[keep], y[keep]
        data[task] = (x, y)

    def acc(model, task, headers=None):
        x, y = data[task]
        return float((infer(sidecar, model, IMAGE, LOGITS, x, headers).argmax(1) == y).mean())

    expert = {}
    for task in tasks:
        x, y = data[task]
        z = infer(triton, f"expert_{task}", IMAGE, FEATURE, x)
        expert[task] = float((infer(triton, f"head_{task}", FEATURE, LOGITS, z).argmax(1) == y).mean())

    prefs = preferences(tasks)
    header = "| model | preference | " + " | ".join(tasks) + " | average | normalised |"
    lines = [f"Test accuracy (%) per task through the sidecar ({sum(len(d[1]) for d in data.values())} test images); "
             "normalised = mean of accuracy / Individual accuracy.", "",
             header, "|" + "---|" * (len(tasks) + 4),
             row("Individual", "(expert_t → head_t)", expert, expert, tasks)]
    summary = ["", "Preference sweep over the tasks, on normalised accuracies: HV over the "
               f"{len(prefs)} preferences (origin as reference), U over the tasks each preference weighs (U@k) "
               "and over all T tasks, averaged over the preferences that weigh two tasks or more; "
               "\"beats merged\" counts the preferences whose p-weighted accuracy exceeds the merged backbone's.", "",
               "| backbone | model | HV | U@k | U (all T) | beats merged |", "|---|---|---|---|---|---|"]
    out = {"individual": expert, "backbones": {}}
    failures, notes = [], []
    for key in args.backbones.split(","):
        name, pattern = MODELS[key]
        model = {t: pattern.format(task=t) for t in tasks}
        merged = {t: acc(model[t], t, {"react-preference": "none"}) for t in tasks}
        results = [(label, spec, p, {t: acc(model[t], t, {"react-preference": spec}) for t in tasks}) for label, spec, p in prefs]
        lines.append(row(f"Merged {name}", "none (no correction)", merged, expert, tasks))
        own = {t: r[3][t] for r in results for t in tasks if r[2][tasks.index(t)] == 1}
        lines.append(row(f"ReACT {name}", "one-hot, each task at its own", own, expert, tasks))
        for label, _, _, a in results:
            lines.append(row(f"ReACT {name}", label, a, expert, tasks))

        a_merged = np.array([merged[t] / expert[t] for t in tasks])
        points = [np.array([r[3][t] / expert[t] for t in tasks]) for r in results]
        interior = [(a, p) for (_, _, p, _), a in zip(results, points) if np.count_nonzero(p) >= 2]
        beats, priority = [], []
        for label, spec, p, a in results:
            w_react = sum(pi * a[t] for pi, t in zip(p, tasks))
            w_merged = sum(pi * merged[t] for pi, t in zip(p, tasks))
            beats.append(w_react > w_merged)
            is_priority = 0 < p.max() < 1 and not np.allclose(p, p[0])
            if is_priority:
                priority.append(w_react - w_merged)
            if not w_react > w_merged:
                what = f"{name} {label}: weighted accuracy {100 * w_react:.2f} vs merged {100 * w_merged:.2f}"
                (notes if is_priority else failures).append(what)
        if priority and not np.mean(priority) > 0:
            failures.append(f"{name} priority preferences: on average {100 * np.mean(priority):+.2f} points against merged")
        for label, pts in (("Merged", [a_merged] * len(points)), ("ReACT", points)):
            u_k = np.mean([uniformity(a[p > 0], p[p > 0]) for (_, p), a in zip(interior, [x for x, _ in interior] if label == "ReACT" else [a_merged] * len(interior))])
            u_all = np.mean([uniformity(a, p) for (_, p), a in zip(interior, [x for x, _ in interior] if label == "ReACT" else [a_merged] * len(interior))])
            beat = f"{sum(beats)}/{len(beats)}" if label == "ReACT" else "—"
            summary.append(f"| {name} | {label} | {hypervolume(pts):.4f} | {u_k:.4f} | {u_all:.4f} | {beat} |")
        out["backbones"][key] = {"merged": merged, "react": [{"preference": s, "label": l, "accuracy": a} for l, s, _, a in results]}

    text = "\n".join(lines + summary)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    for note in notes:
        print(f"evaluate: note: {note} (a priority preference)", file=sys.stderr)
    if args.check and failures:
        print("evaluate: preferences that do not beat the merged backbone:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
