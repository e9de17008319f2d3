"""The zoo's A/B experiment through the ReACT sidecar, as live traffic would
run it, what each arm did, and the outcomes its clients report.

tritonmodels/zoo/sidecar.yaml splits the users of the controllable model
fashion_ab between two arms by their x-user-id header: "merged" (the merged
backbone's answer, no correction) and "react" (W_p for fashion=1). Each of
--users simulated users (default: one per fashion test image) sends one
request of one fashion test image with its id, through the official
tritonclient (gRPC); the sidecar picks the arm, echoes it in react-arm and,
as the request carries no id of its own, returns the id it recorded the
request under in react-request-id. Then the user reports the image's true
label as the request's outcome: POST /v2/models/fashion_ab/feedback
{"id": <react-request-id>, "label": <class>} on the sidecar's HTTP port,
which joins it to the arm and prediction that served the request.

Per arm this prints the users, the accuracy on the labels and the mean
top-1 confidence (largest softmax probability), computed here from the
logits, and next to them what the sidecar's own per-arm metrics say
(react_experiment_requests_total, react_experiment_top1_confidence, and the
outcome counters react_experiment_outcomes_total and
react_experiment_outcome_score_total, whose ratio is the arm's accuracy as
`calibrate experiment report` reads it). Every user's arm is checked
against experiment/assign.py, each feedback's answer against the arm and
the score the client expects, and the metrics against the client's
counts; a mismatch exits 1.

Usage: python experiment.py --sidecar HOST:PORT --sidecar-http HOST:PORT
           --metrics HOST:PORT --data DIR [--users N] [--markdown FILE]
"""
import argparse
import collections
import concurrent.futures
import json
import pathlib
import re
import sys
import threading
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


def feedback(http_addr, rid, label):
    """Posts a request's true label; returns the sidecar's answer (a dict)."""
    req = urllib.request.Request(f"http://{http_addr}/v2/models/{MODEL}/feedback",
                                 data=json.dumps({"id": rid, "label": int(label)}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", required=True, help="the sidecar's gRPC address")
    ap.add_argument("--sidecar-http", required=True, help="the sidecar's HTTP address, for the feedback")
    ap.add_argument("--metrics", required=True, help="the sidecar's metrics address")
    ap.add_argument("--data", required=True, help="the zoo data directory")
    ap.add_argument("--users", type=int, default=0, help="simulated users, one test image each (default: the whole test split)")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()

    x, y = images(args.data, "fashion", "test")
    n = min(args.users or len(x), len(x))
    before = scrape(args.metrics)
    local = threading.local()

    def user(i):
        if not hasattr(local, "client"):
            local.client = grpcclient.InferenceServerClient(args.sidecar)
        key = f"user-{i}"
        inp = grpcclient.InferInput(IMAGE, [1, *x.shape[1:]], "FP32")
        inp.set_data_from_numpy(np.ascontiguousarray(x[i:i + 1]))
        r = local.client.infer(MODEL, [inp], headers={"x-user-id": key})
        params = r.get_response().parameters
        logits = r.as_numpy(LOGITS)[0].astype(np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        arm, rid = params["react-arm"].string_param, params["react-request-id"].string_param
        correct = int(logits.argmax() == y[i])
        answer = feedback(args.sidecar_http, rid, y[i])
        return key, arm, params["react-preference"].string_param, correct, float(p.max()), rid, answer

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(user, range(n)))
    after = scrape(args.metrics)

    stats = collections.defaultdict(lambda: [0, 0, 0.0])  # users, correct, confidence sum
    problems = []
    for key, arm, pref, correct, conf, rid, answer in results:
        if arm != assign(EXPERIMENT, key, ARMS) or pref != PREFERENCE[arm]:
            problems.append(f"{key}: arm {arm} ({pref}), experiment/assign.py says {assign(EXPERIMENT, key, ARMS)}")
        if (answer.get("arm"), answer.get("id"), answer.get("score")) != (arm, rid, float(correct)):
            problems.append(f"{key}: feedback answered {answer}, the client expected arm {arm}, id {rid}, score {correct}")
        s = stats[arm]
        s[0], s[1], s[2] = s[0] + 1, s[1] + correct, s[2] + conf

    def delta(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    lines = ["| arm | preference | users | accuracy | mean top-1 confidence | sidecar: requests | sidecar: mean top-1 confidence "
             "| sidecar: outcomes | sidecar: accuracy from the outcomes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for arm, _ in ARMS:
        users, correct, conf = stats[arm]
        m_req = delta("react_experiment_requests_total", arm=arm)
        m_sum = delta("react_experiment_top1_confidence_sum", arm=arm)
        m_cnt = delta("react_experiment_top1_confidence_count", arm=arm)
        m_out = delta("react_experiment_outcomes_total", arm=arm, kind="label")
        m_score = delta("react_experiment_outcome_score_total", arm=arm, kind="label")
        if m_req != users or m_cnt != users or (users and abs(m_sum / m_cnt - conf / users) > 1e-4):
            problems.append(f"arm {arm}: metrics say {m_req:g} requests, {m_cnt:g} rows, mean confidence {m_sum / max(m_cnt, 1):.4f}; "
                            f"the client counted {users}, {users}, {conf / max(users, 1):.4f}")
        if m_out != users or m_score != correct:
            problems.append(f"arm {arm}: the outcome counters say {m_out:g} outcomes, {m_score:g} correct; the client reported {users}, {correct}")
        lines.append(f"| {arm} | {PREFERENCE[arm]} | {users} | {correct / max(users, 1):.4f} | {conf / max(users, 1):.4f} | "
                     f"{m_req:.0f} | {m_sum / max(m_cnt, 1):.4f} | {m_out:.0f} | {m_score / max(m_out, 1):.4f} |")
    table = "\n".join(lines)
    print(f"experiment {EXPERIMENT} on {MODEL}: {n} users, one fashion test image each, keyed by x-user-id; "
          "each reported its image's true label as the outcome (POST /v2/models/fashion_ab/feedback)")
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table + "\n")
    if problems:
        print("MISMATCH:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
        sys.exit(1)
    print("every user's arm is the one experiment/assign.py gives, every outcome was joined to it, "
          "and the sidecar's per-arm metrics match the client's counts")


if __name__ == "__main__":
    main()
