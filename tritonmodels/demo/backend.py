"""Backend mode in the demo: the same correction inside Triton, as one step of
an ensemble, next to the sidecar's.

For each task it sends the labelled test images, in batches, three ways,
with the official tritonclient (gRPC):
  plain     Triton's ensemble <task> (backbone -> head): the merged backbone;
  backend   Triton's ensemble <task>_react (backbone -> react -> head), with
            the preference <task>=1 as the request parameter react-preference;
  sidecar   the sidecar's controllable model <task>, with the same preference
            in the react-preference header.
It prints each way's accuracy and the largest difference between the
backend's and the sidecar's logits: both apply the same W_p, so they agree to
float rounding (a difference above 1e-3 exits 1).

Usage: python backend.py --triton HOST:PORT --sidecar HOST:PORT --data DIR
           [--tasks fashion,mnist,...] [--markdown FILE]
"""
import argparse
import pathlib
import sys

import numpy as np
import tritonclient.grpc as grpcclient

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from export_calib import MANIFEST, images  # noqa: E402

IMAGE = MANIFEST["backbone"]["input"]["name"]
LOGITS = MANIFEST["head"]["output"]
BATCH = 256
TOLERANCE = 1e-3


def logits(client, model, x, **kwargs):
    out = []
    for start in range(0, len(x), BATCH):
        part = np.ascontiguousarray(x[start:start + BATCH])
        inp = grpcclient.InferInput(IMAGE, list(part.shape), "FP32")
        inp.set_data_from_numpy(part)
        out.append(client.infer(model, [inp], **kwargs).as_numpy(LOGITS))
    return np.concatenate(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triton", required=True, help="Triton's gRPC address")
    ap.add_argument("--sidecar", required=True, help="the sidecar's gRPC address")
    ap.add_argument("--data", required=True, help="the zoo data directory (.cache/zoo-data)")
    ap.add_argument("--tasks", default=",".join(MANIFEST["tasks"]))
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()

    triton = grpcclient.InferenceServerClient(args.triton)
    sidecar = grpcclient.InferenceServerClient(args.sidecar)
    rows, worst = [], 0.0
    for task in args.tasks.split(","):
        x, y = images(args.data, task, "test")
        pref = f"{task}=1"
        plain = logits(triton, task, x)
        backend = logits(triton, f"{task}_react", x, parameters={"react-preference": pref})
        side = logits(sidecar, task, x, headers={"react-preference": pref})
        diff = float(np.abs(backend.astype(np.float64) - side).max())
        worst = max(worst, diff)
        acc = [100 * float((z.argmax(1) == y).mean()) for z in (plain, backend, side)]
        rows.append(f"| {task} | {len(y)} | {acc[0]:.1f} | {acc[1]:.1f} | {acc[2]:.1f} | {diff:.1e} |")
    table = "\n".join(["| task | images | plain ensemble % | backend `<task>_react`, `<task>=1` % "
                       "| sidecar, `<task>=1` % | max abs logit diff, backend vs sidecar |",
                       "|---|---:|---:|---:|---:|---:|", *rows])
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table + "\n")
    if worst > TOLERANCE:
        print(f"backend: the backend and the sidecar disagree by {worst:.3g} > {TOLERANCE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
