"""Export the zoo's images as folders of PNG files, one per task, for
`calibrate fit --inputs DIR` with image folders (docs/calibrate.md).

    .venv/bin/python scripts/zoo-png.py --out DIR [--tasks fashion,mnist,digits]
        [--split calib] [--repeat K] [--npy NPY_DIR] [--data .cache/zoo-data]

For each task it writes DIR/<task>/<i>.png (i zero-padded, so that the
lexical order of the names is the split's order), 28x28 8-bit greyscale,
from .cache/zoo-data/<task>/<split>.npz (scripts/zoo-data.sh). --repeat K
writes the split K times over (names <copy>-<i>.png), for benchmarks at K
times the data. --npy NPY_DIR also writes NPY_DIR/<task>.npy, the same
images as calibrate fit's tensor input: float32 [N,1,28,28], x / 255.

The PNG encoder is written here with the standard library (zlib), so that it
needs no image package and is independent of Go's decoder that reads the
files back.
"""

import argparse
import pathlib
import struct
import sys
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def png_bytes(img):
    """A greyscale 8-bit PNG of img, a 2-D uint8 array."""
    if img.dtype != np.uint8 or img.ndim != 2:
        raise ValueError(f"want a 2-D uint8 image, got {img.dtype} {img.shape}")
    h, w = img.shape

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    # Each row is preceded by its filter type, 0 (none).
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6))
            + chunk(b"IEND", b""))


def export(x, folder, repeat=1):
    """Writes the images x (N x H x W uint8) to folder; returns how many."""
    folder.mkdir(parents=True, exist_ok=True)
    width = len(str(len(x) - 1))
    for k in range(repeat):
        prefix = f"{k:03d}-" if repeat > 1 else ""
        for i, img in enumerate(x):
            (folder / f"{prefix}{i:0{width}d}.png").write_bytes(png_bytes(img))
    return repeat * len(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path, help="folder of the task folders")
    ap.add_argument("--tasks", default="fashion,mnist,digits", help="comma-separated tasks")
    ap.add_argument("--split", default="calib", choices=["train", "calib", "test"])
    ap.add_argument("--repeat", type=int, default=1, help="write the split this many times over")
    ap.add_argument("--npy", type=pathlib.Path, help="also write <task>.npy, float32 [N,1,28,28] in [0,1], here")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT / ".cache" / "zoo-data")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    for task in args.tasks.split(","):
        path = args.data / task / f"{args.split}.npz"
        if not path.is_file():
            print(f"zoo-png: {path} is missing: run scripts/zoo-data.sh", file=sys.stderr)
            return 1
        with np.load(path) as f:
            x = f["x"]
        n = export(x, args.out / task, args.repeat)
        if args.npy:
            args.npy.mkdir(parents=True, exist_ok=True)
            t = (x.astype(np.float32) / 255)[:, None, :, :]
            np.save(args.npy / f"{task}.npy", np.concatenate([t] * args.repeat))
        print(f"zoo-png: {task}: {n} images in {args.out / task}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
