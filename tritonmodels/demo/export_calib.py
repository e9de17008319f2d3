"""Write each zoo task's images of one split as the input files of
`calibrate fit --triton` (the unlabelled `calib` split, the default) or
`calibrate eval` (`--split test`): OUT/<task>.npy, float32 [N,1,28,28],
pixels in [0,1], the models' `image` input without its batch dimension,
and for a labelled split OUT/<task>.labels.npy, int64 [N].

Usage: python export_calib.py --data .cache/zoo-data --out DIR [--split calib|test|train] [--tasks a,b] [--limit N]
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
    ap.add_argument("--split", default="calib", choices=["calib", "test", "train"], help="the split to write (default calib)")
    ap.add_argument("--limit", type=int, help="at most this many images per task, a seeded random subset")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks.split(",") if args.tasks else list(MANIFEST["tasks"])
    for task in tasks:
        x, y = images(args.data, task, args.split)
        if args.limit is not None and args.limit < len(x):
            # A limit takes a seeded random subset, never the first N.
            pick = np.sort(np.random.default_rng(0).choice(len(x), size=args.limit, replace=False))
            x = x[pick]
            y = y[pick] if y is not None else None
        np.save(out / f"{task}.npy", np.ascontiguousarray(x))
        if y is not None:
            np.save(out / f"{task}.labels.npy", np.ascontiguousarray(y, dtype=np.int64))
        print(f"{task}: {len(x)} {args.split} images -> {out / (task + '.npy')}")


if __name__ == "__main__":
    main()
