"""Write each zoo task's unlabelled calibration images as the input files of
`calibrate fit --triton`: OUT/<task>.npy, float32 [N,1,28,28], pixels in
[0,1], the models' `image` input without its batch dimension.

Usage: python export_calib.py --data .cache/zoo-data --out DIR [--tasks a,b] [--limit N]
"""
import argparse
import json
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFEST = json.loads((ROOT / "tritonmodels" / "zoo" / "manifest.json").read_text())


def images(data, task, split):
    """A split's images as the models take them, and its labels (None for calib)."""
    with np.load(pathlib.Path(data) / task / f"{split}.npz") as f:
        x = (f["x"].astype(np.float32) / 255)[:, None, :, :]
        y = f["y"] if "y" in f else None
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the zoo data directory (scripts/zoo-data.sh)")
    ap.add_argument("--out", required=True, help="directory to write <task>.npy to")
    ap.add_argument("--tasks", help="comma-separated tasks (default: every task of the manifest)")
    ap.add_argument("--limit", type=int, help="at most this many images per task")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks.split(",") if args.tasks else list(MANIFEST["tasks"])
    for task in tasks:
        x, _ = images(args.data, task, "calib")
        if args.limit is not None and args.limit < len(x):
            # Splits are stored in source order (mnist's is grouped by
            # digit): a limit takes a seeded random subset, not the first N.
            pick = np.random.default_rng(0).choice(len(x), size=args.limit, replace=False)
            x = x[np.sort(pick)]
        np.save(out / f"{task}.npy", np.ascontiguousarray(x))
        print(f"{task}: {len(x)} calibration images -> {out / (task + '.npy')}")


if __name__ == "__main__":
    main()
