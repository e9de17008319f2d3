"""Fit each task's head on the base, then fine-tune one expert per task.

For task t:
  1. head_t: a cosine head (fixed scale) fitted on the frozen base's features
     of the task's train split, the analogue of CLIP's zero-shot head;
  2. expert_t: the whole backbone, started from the base and fine-tuned on
     the train split with head_t frozen, as in Task Arithmetic.
So every backbone (base, experts, merges) is read through the same head_t.
Writes WORK/head/<task>.pt and WORK/expert/<task>.pt.
"""
import argparse
import copy

import torch
import torch.nn.functional as F

import common
from vit import CosineHead


def fit_head(base, x, y, n_classes, epochs=200, lr=0.05, limit=None, name="head"):
    """Full-batch fit of a cosine head on frozen features (of a seeded random
    subset of `limit` rows when given)."""
    rows = common.subset(len(x), limit, name)
    x, y = x[rows], y[rows]
    z = common.features(base, x)
    head = CosineHead(z.shape[1], n_classes)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    for _ in range(epochs):
        loss = F.cross_entropy(head(z), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    head.requires_grad_(False)
    acc = (head(z).argmax(1) == y).float().mean().item()
    return head, acc


def finetune(base, head, x, y, epochs, batch, lr, seed, steps=None):
    """Fine-tunes a copy of base for `epochs` passes over (x, y), or for
    exactly `steps` batches when given."""
    model = common.train_mode(copy.deepcopy(base))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps_per_epoch = max(1, len(x) // batch)
    total, step = epochs * steps_per_epoch, 0
    if steps is not None:
        total, epochs = steps, -(-steps // steps_per_epoch)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        for b in range(steps_per_epoch):
            if step == total:
                break
            idx = perm[b * batch:(b + 1) * batch]
            loss = F.cross_entropy(head(model(x[idx])), y[idx])
            common.cosine_lr(opt, lr, step, total, warmup=steps_per_epoch // 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--min-steps", type=int, default=300,
                    help="small tasks get more epochs, up to this many steps")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=None,
                    help="fine-tune for exactly this many batches (overrides --epochs)")
    ap.add_argument("--head-limit", type=int, default=None,
                    help="fit each head on this many train images (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", default=",".join(common.TASKS))
    args = ap.parse_args()
    common.setup(args.seed)

    base = common.load_backbone("base")
    base.requires_grad_(False)
    for i, task in enumerate(args.tasks.split(",")):
        with common.Timer(f"finetune/{task}"):
            x, y = common.load_split(task, "train")
            head, probe_acc = fit_head(base, x, y, len(common.classes(task)), limit=args.head_limit,
                                       name=f"head/{task}")
            common.save_head(head, task)
            epochs = max(args.epochs, -(-args.min_steps * args.batch // len(x)))
            expert = finetune(base.requires_grad_(True), head, x, y, epochs,
                              args.batch, args.lr, args.seed + i, args.steps)
            base.requires_grad_(False)
            common.save_backbone(expert, f"expert/{task}")
            rows = common.subset(len(x), args.head_limit, f"head/{task}")
            with torch.no_grad():
                train_acc = (head(common.features(expert, x[rows])).argmax(1) == y[rows]).float().mean().item()
            done = f"{args.steps} steps" if args.steps is not None else f"{epochs} epochs"
            print(f"finetune: {task}: base+head train acc {probe_acc:.3f}, "
                  f"expert train acc {train_acc:.3f} ({done})", flush=True)


if __name__ == "__main__":
    main()
