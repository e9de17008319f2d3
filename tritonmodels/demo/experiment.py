"""The zoo's A/B experiment through the ReACT sidecar, as live traffic would
run it, and what each arm did.

tritonmodels/zoo/sidecar.yaml splits the users of the controllable model
fashion_ab between two arms by their x-user-id header: "merged" (the merged
backbone's answer, no correction) and "react" (W_p for fashion=1). Each of
--users simulated users sends one request of --per-user fashion test images
with its id, through the official tritonclient (gRPC); the sidecar picks the
arm and echoes it in react-arm. Per arm this prints the users and requests,
the accuracy on the labels (which the sidecar never sees) and the mean top-1
confidence (largest softmax probability), computed here from the logits, and
next to them what the sidecar's own per-arm metrics say
(react_experiment_requests_total, react_experiment_top1_confidence). Every
user's arm is checked against experiment/assign.py, and the metrics against
the client's counts; a mismatch exits 1.

Usage: python experiment.py --sidecar HOST:PORT --metrics HOST:PORT --data DIR
           [--users 400] [--per-user 4] [--markdown FILE]
"""
import argparse
import collections
import concurrent.futures
import pathlib
import re
import sys
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "experiment"))
from assign import assign  # noqa: E402  (experiment/assign.py)
from export_calib import MANIFEST, images  # noqa: E402

IMAGE = MANIFEST["backbone"]["input"]["name"]
LOGITS = MANIFEST["head"]["output"]
MODEL, EXPERIMENT = "fashion_ab", "fashion-ab"
ARMS = [("merged", 50), ("react", 50)]  # as in tritonmodels/zoo/sidecar.yaml
PREFERENCE = {"merged": "none", "react": "fashion=1"}


def scrape(addr):
    """{(name, frozenset(labels)): value} of the experiment's samples."""
    text = urllib.request.urlopen(f"http://{addr}/metrics", timeout=10).read().decode()
    out = {}
    for m in re.finditer(r'^(react_experiment_\w+)\{([^}]*)\} (\S+)$', text, re.M):
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(samples, name, **labels):
    want = set(labels.items()) | {("model", MODEL), ("experiment", EXPERIMENT)}
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", required=True, help="the sidecar's gRPC address")
    ap.add_argument("--metrics", required=True, help="the sidecar's metrics address")
    ap.add_argument("--data", required=True, help="the zoo data directory")
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--per-user", type=int, default=4)
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()

    x, y = images(args.data, "fashion", "test")
    n = min(args.users, len(x) // args.per_user)
    before = scrape(args.metrics)

    def user(i):
        client = grpcclient.InferenceServerClient(args.sidecar)
        rows = slice(i * args.per_user, (i + 1) * args.per_user)
        inp = grpcclient.InferInput(IMAGE, [args.per_user, *x.shape[1:]], "FP32")
        inp.set_data_from_numpy(np.ascontiguousarray(x[rows]))
        r = client.infer(MODEL, [inp], headers={"x-user-id": f"user-{i}"})
        params = r.get_response().parameters
        logits = r.as_numpy(LOGITS).astype(np.float64)
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        client.close()
        return (f"user-{i}", params["react-arm"].string_param, params["react-preference"].string_param,
                int((logits.argmax(1) == y[rows]).sum()), float(p.max(1).sum()))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(user, range(n)))
    after = scrape(args.metrics)

    stats = collections.defaultdict(lambda: [0, 0, 0.0])  # requests, correct, confidence sum
    problems = []
    for key, arm, pref, correct, conf in results:
        if arm != assign(EXPERIMENT, key, ARMS) or pref != PREFERENCE[arm]:
            problems.append(f"{key}: arm {arm} ({pref}), experiment/assign.py says {assign(EXPERIMENT, key, ARMS)}")
        s = stats[arm]
        s[0], s[1], s[2] = s[0] + 1, s[1] + correct, s[2] + conf

    lines = ["| arm | preference | users (requests) | images | accuracy | mean top-1 confidence | sidecar: requests | sidecar: mean top-1 confidence |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for arm, _ in ARMS:
        req, correct, conf = stats[arm]
        imgs = req * args.per_user
        m_req = total(after, "react_experiment_requests_total", arm=arm) - total(before, "react_experiment_requests_total", arm=arm)
        m_sum = total(after, "react_experiment_top1_confidence_sum", arm=arm) - total(before, "react_experiment_top1_confidence_sum", arm=arm)
        m_cnt = total(after, "react_experiment_top1_confidence_count", arm=arm) - total(before, "react_experiment_top1_confidence_count", arm=arm)
        if m_req != req or m_cnt != imgs or (imgs and abs(m_sum / m_cnt - conf / imgs) > 1e-4):
            problems.append(f"arm {arm}: metrics say {m_req:g} requests, {m_cnt:g} rows, mean confidence {m_sum / max(m_cnt, 1):.4f}; "
                            f"the client counted {req}, {imgs}, {conf / max(imgs, 1):.4f}")
        lines.append(f"| {arm} | {PREFERENCE[arm]} | {req} | {imgs} | {correct / max(imgs, 1):.4f} | {conf / max(imgs, 1):.4f} | "
                     f"{m_req:.0f} | {m_sum / max(m_cnt, 1):.4f} |")
    table = "\n".join(lines)
    print(f"experiment {EXPERIMENT} on {MODEL}: {n} users, {args.per_user} fashion test images each, keyed by x-user-id")
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table + "\n")
    if problems:
        print("MISMATCH:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
        sys.exit(1)
    print("every user's arm is the one experiment/assign.py gives; the sidecar's per-arm metrics match the client's counts")


if __name__ == "__main__":
    main()
