"""Sends each task's inputs through the ReACT sidecar as live traffic, so
that the sidecar's live sampling (the `sampling:` section of its
configuration) accumulates the task's statistics from them.

For each task, INPUTS/<task>.npy (written by export_calib.py; a labelled
split's <task>.labels.npy beside it is never read) is sent in requests of
--chunk images to the model --model names for the task (default the task's
own name, its deployed classifier), with the official tritonclient (gRPC).
After each request the client waits until the sidecar has accounted for it
on /metrics (sampled, react_sampling_requests_total, or skipped,
react_sampling_skipped_total), so that at most one sample is in flight and
none is skipped for want of a free slot (sampling.max_concurrent).

Prints, per task, the requests and images sent and what the sidecar
counted: requests sampled, skipped (by reason) and rows accumulated
(react_sampling_rows_total, part fit). Exits 1 if a request failed or was
not accounted for within --timeout seconds; requests skipped are reported,
not fatal (the sample counts say how many rows the statistics hold).

Usage: python traffic.py --sidecar HOST:PORT --metrics HOST:PORT --inputs DIR
           [--tasks a,b] [--model PATTERN] [--chunk N] [--timeout S]
"""
import argparse
import pathlib
import re
import sys
import time
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from export_calib import MANIFEST  # noqa: E402

IMAGE = MANIFEST["backbone"]["input"]["name"]
REQUESTS, SKIPPED, ROWS = "react_sampling_requests_total", "react_sampling_skipped_total", "react_sampling_rows_total"


def scrape(addr):
    """{(name, frozenset(labels)): value} of the sidecar's sampling metrics."""
    text = urllib.request.urlopen(f"http://{addr}/metrics", timeout=10).read().decode()
    out = {}
    for m in re.finditer(r'^(react_sampling_\w+)\{([^}]*)\} (\S+)$', text, re.M):
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(samples, name, **labels):
    """The sum of a metric's samples whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def accounted(samples, model):
    """The requests to `model` the sidecar has sampled or skipped."""
    return total(samples, REQUESTS, model=model) + total(samples, SKIPPED, model=model)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", required=True, help="the sidecar's gRPC address, host:port")
    ap.add_argument("--metrics", required=True, help="the sidecar's metrics address, host:port")
    ap.add_argument("--inputs", required=True, help="the directory of <task>.npy")
    ap.add_argument("--tasks", help="comma-separated tasks (default: every task of the manifest)")
    ap.add_argument("--model", default="{task}", help="the model each task's traffic goes to; {task} is replaced (default {task})")
    ap.add_argument("--chunk", type=int, default=64, help="images per request (default 64)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for a request's sample (default 120)")
    args = ap.parse_args()
    tasks = args.tasks.split(",") if args.tasks else list(MANIFEST["tasks"])
    client = grpcclient.InferenceServerClient(args.sidecar)
    ok = True
    for task in tasks:
        model = args.model.replace("{task}", task)
        x = np.load(pathlib.Path(args.inputs) / f"{task}.npy")
        base = accounted(scrape(args.metrics), model)
        sent = 0
        t0 = time.monotonic()
        for start in range(0, len(x), args.chunk):
            batch = np.ascontiguousarray(x[start:start + args.chunk])
            inp = grpcclient.InferInput(IMAGE, list(batch.shape), "FP32")
            inp.set_data_from_numpy(batch)
            client.infer(model, [inp])
            sent += 1
            deadline = time.monotonic() + args.timeout
            while accounted(scrape(args.metrics), model) < base + sent:
                if time.monotonic() > deadline:
                    print(f"{task}: request {sent} to {model} not sampled nor skipped after {args.timeout:g} s", file=sys.stderr)
                    return 1
                time.sleep(0.01)
        samples = scrape(args.metrics)
        skipped = {dict(ls)["reason"]: int(v) for (n, ls), v in samples.items() if n == SKIPPED and ("model", model) in ls and v}
        sampled = total(samples, REQUESTS, model=model)
        rows = total(samples, ROWS, task=task, part="fit")
        print(f"{task}: {sent} requests ({len(x)} images) to {model} in {time.monotonic() - t0:.1f} s; "
              f"sidecar: {sampled:.0f} sampled, {rows:.0f} rows, skipped {skipped or 'none'}")
        if skipped:
            ok = False
    if not ok:
        print("some requests were not sampled: the statistics hold fewer rows than the traffic", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
