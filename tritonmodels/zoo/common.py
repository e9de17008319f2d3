"""Shared helpers for the zoo stages: paths, data loading, seeds, timing."""
import json
import os
import random
import time
import zlib

import numpy as np
import torch

import effnet
import zooenv
import vit
from vit import CosineHead

TASKS = ["fashion", "mnist", "digits", "letters", "greek", "fontdigits"]
MERGES = ["ta", "ties", "adamerging"]

# Where the stages read and write: zooenv.py, from the environment.
settings = zooenv.settings


def architecture():
    """The backbone's module for the zoo being built: its CONFIG and layer_groups."""
    return vit if settings().name == "vit" else effnet


def setup(seed=0):
    """ZOO_THREADS threads (default one: the machine is shared) and fixed seeds."""
    torch.set_num_threads(settings().threads)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def load_split(task, split):
    """Images as float32 [N,1,28,28] in [0,1], and labels (None for calib),
    in the split's source order: data.py stores each split shuffled (so any
    prefix is a fair sample) with the permutation as `order`, which this
    undoes, so that every build stage sees the rows in the order the
    committed models were built from."""
    with np.load(os.path.join(settings().data, task, f"{split}.npz")) as f:
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


def subset(n, limit, name):
    """Indices of a seeded random subset of `limit` of n rows (all n when
    limit is None), in ascending order: never a prefix, since load_split
    returns rows in their source order, which some sources group by class."""
    if limit is None or limit >= n:
        return torch.arange(n)
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    return torch.randperm(n, generator=gen)[:limit].sort().values


def classes(task):
    with open(os.path.join(settings().data, task, "classes.json")) as f:
        return json.load(f)["classes"]


def new_backbone():
    """An untrained backbone of the zoo's architecture."""
    if settings().name == "vit":
        return vit.ViT(**vit.CONFIG)
    return effnet.EfficientNetLite0(image=effnet.CONFIG["image"])


def load_backbone(name):
    """name: 'base', 'expert/<task>' or 'merged/<method>'."""
    model = new_backbone()
    model.load_state_dict(torch.load(os.path.join(settings().work, name + ".pt")))
    return model.eval()


def train_mode(model):
    """model.train(), except that BatchNorm layers keep normalising with the
    pre-trained running statistics (and do not update them): every expert
    then shares the base's statistics, so a merge of the experts' parameters
    is a whole model. The ViT has no BatchNorm, so this is model.train()."""
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.eval()
    return model


def save_backbone(model, name):
    path = os.path.join(settings().work, name + ".pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(model.state_dict(), path)


def load_head(task):
    weight = torch.load(os.path.join(settings().work, "head", task + ".pt"))
    head = CosineHead(weight.shape[1], weight.shape[0])
    head.weight.data.copy_(weight)
    head.requires_grad_(False)
    return head.eval()


def save_head(head, task):
    path = os.path.join(settings().work, "head", task + ".pt")
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
        work = settings().work
        path = os.path.join(work, "timings.json")
        timings = {}
        if os.path.exists(path):
            with open(path) as f:
                timings = json.load(f)
        timings[self.stage] = round(dt, 1)
        os.makedirs(work, exist_ok=True)
        with open(path, "w") as f:
            json.dump(timings, f, indent=1)
        print(f"{self.stage}: {dt:.1f} s", flush=True)
