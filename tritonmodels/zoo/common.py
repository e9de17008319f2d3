"""Shared helpers for the zoo stages: paths, data loading, seeds, timing."""
import json
import os
import random
import time

import numpy as np
import torch

from vit import CONFIG, CosineHead, ViT

TASKS = ["fashion", "mnist", "digits", "letters", "greek", "fontdigits"]
MERGES = ["ta", "ties", "adamerging"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.environ.get("ZOO_DATA", os.path.join(ROOT, ".cache", "zoo-data"))
WORK = os.environ.get("ZOO_WORK", os.path.join(ROOT, ".cache", "zoo-models"))
# Where the committed artefacts go: onnx/, manifest.json, results.json.
ZOO_DEFAULT = os.path.join(ROOT, "tritonmodels", "zoo")
ZOO = os.environ.get("ZOO_OUT", ZOO_DEFAULT)


def setup(seed=0):
    """One thread (the machine is shared) and fixed seeds."""
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def load_split(task, split):
    """Images as float32 [N,1,28,28] in [0,1], and labels (None for calib),
    in the split's source order: data.py stores each split shuffled (so any
    prefix is a fair sample) with the permutation as `order`, which this
    undoes, so that every build stage sees the rows in the order the
    committed models were built from."""
    with np.load(os.path.join(DATA, task, f"{split}.npz")) as f:
        x, y = f["x"], (f["y"] if "y" in f else None)
        if "order" in f:
            source = np.empty_like(x)
            source[f["order"]] = x
            x = source
            if y is not None:
                ys = np.empty_like(y)
                ys[f["order"]] = y
                y = ys
    x = torch.from_numpy(x.astype(np.float32) / 255).unsqueeze(1)
    return x, (torch.from_numpy(y) if y is not None else None)


def classes(task):
    with open(os.path.join(DATA, task, "classes.json")) as f:
        return json.load(f)["classes"]


def new_backbone():
    return ViT(**CONFIG)


def load_backbone(name):
    """name: 'base', 'expert/<task>' or 'merged/<method>'."""
    model = new_backbone()
    model.load_state_dict(torch.load(os.path.join(WORK, name + ".pt")))
    return model.eval()


def save_backbone(model, name):
    path = os.path.join(WORK, name + ".pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(model.state_dict(), path)


def load_head(task):
    weight = torch.load(os.path.join(WORK, "head", task + ".pt"))
    head = CosineHead(weight.shape[1], weight.shape[0])
    head.weight.data.copy_(weight)
    head.requires_grad_(False)
    return head.eval()


def save_head(head, task):
    path = os.path.join(WORK, "head", task + ".pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(head.weight.detach().clone(), path)


@torch.no_grad()
def features(model, x, batch=512):
    return torch.cat([model(x[i:i + batch]) for i in range(0, len(x), batch)])


def cosine_lr(opt, base_lr, step, total, warmup=0):
    if step < warmup:
        lr = base_lr * (step + 1) / warmup
    else:
        lr = 0.5 * base_lr * (1 + np.cos(np.pi * (step - warmup) / max(1, total - warmup)))
    for g in opt.param_groups:
        g["lr"] = lr


class Timer:
    """Prints and records how long a stage took, in WORK/timings.json."""

    def __init__(self, stage):
        self.stage = stage

    def __enter__(self):
        self.t0 = time.time()
        return self

    def __exit__(self, *exc):
        dt = time.time() - self.t0
        path = os.path.join(WORK, "timings.json")
        timings = {}
        if os.path.exists(path):
            with open(path) as f:
                timings = json.load(f)
        timings[self.stage] = round(dt, 1)
        os.makedirs(WORK, exist_ok=True)
        with open(path, "w") as f:
            json.dump(timings, f, indent=1)
        print(f"{self.stage}: {dt:.1f} s", flush=True)
