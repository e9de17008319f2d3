"""Merge the experts' backbones: Task Arithmetic, TIES-Merging, AdaMerging.

Task vectors are tau_t = theta_t - theta_base over every backbone parameter.

  ta          theta = base + lam * sum_t tau_t
  ties        trim each tau_t to its top-k fraction by magnitude, elect a sign
              per entry (sign of the sum), average the entries that agree,
              theta = base + lam * merged
  adamerging  layer-wise: theta_l = base_l + sum_t lam_{t,l} tau_{t,l}, the
              lam_{t,l} (kept in [0, 1]) learnt by minimising the heads'
              prediction entropy on the unlabelled calib images, starting
              from TA's chosen lambda (the paper's 0.3 is TA's usual choice).

No labels are used. TA's and TIES's hyper-parameters are chosen on calib by
agreement with the experts: the share of calib images on which the merged
backbone + head_t predicts what expert_t + head_t predicts, averaged over
tasks. Writes WORK/merged/<method>.pt and WORK/merged/settings.json.
"""
import argparse
import json
import os

import torch
from torch.nn.utils.stateless import functional_call

import common

TA_GRID = [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]
TIES_K_GRID = [0.1, 0.2, 0.4]
TIES_LAM_GRID = [0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2, 1.5]


def state(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def with_params(params, buffers):
    """A backbone with these parameters and the base's buffers (BatchNorm's
    running statistics, shared by every expert; the ViT has none)."""
    model = common.new_backbone()
    model.load_state_dict({**buffers, **params}, strict=True)
    return model.eval()


def agreement(model, calib, heads, targets):
    """Mean over tasks of the share of calib predictions equal to the expert's."""
    scores = []
    for task, x in calib.items():
        pred = heads[task](common.features(model, x)).argmax(1)
        scores.append((pred == targets[task]).float().mean().item())
    return sum(scores) / len(scores)


def task_vector_geometry(base, taus, tasks):
    """Each task vector's norm relative to the base's weights, and the cosine
    between every two: small, nearly orthogonal task vectors are the regime
    task arithmetic assumes."""
    flat = torch.stack([torch.cat([tau[k].flatten() for k in base]) for tau in taus])
    norm0 = torch.cat([base[k].flatten() for k in base]).norm()
    unit = flat / flat.norm(dim=1, keepdim=True)
    cos = unit @ unit.t()
    return {"relative_norm": {t: round((flat[i].norm() / norm0).item(), 5) for i, t in enumerate(tasks)},
            "cosine": {f"{a},{b}": round(cos[i, j].item(), 4)
                       for i, a in enumerate(tasks) for j, b in enumerate(tasks) if i < j}}


def task_arithmetic(base, taus, lam):
    return {k: base[k] + lam * sum(tau[k] for tau in taus) for k in base}


def ties(base, taus, k, lam):
    keys = list(base)
    flat = torch.stack([torch.cat([tau[n].flatten() for n in keys]) for tau in taus])
    keep = max(1, int(k * flat.shape[1]))
    thresh = flat.abs().kthvalue(flat.shape[1] - keep + 1, dim=1, keepdim=True).values
    trimmed = flat * (flat.abs() >= thresh)
    sign = torch.sign(trimmed.sum(0))
    agree = (torch.sign(trimmed) == sign) & (trimmed != 0)
    merged = (trimmed * agree).sum(0) / agree.sum(0).clamp(min=1)
    out, start = {}, 0
    for n in keys:
        size = base[n].numel()
        out[n] = base[n] + lam * merged[start:start + size].view_as(base[n])
        start += size
    return out


def adamerging(base, buffers, taus, calib, heads, steps, batch, lr, seed, init=0.3):
    model = with_params(base, buffers)
    groups = common.architecture().layer_groups(model)
    group_of = {n: g for g, (_, names) in enumerate(groups) for n in names}
    lam = torch.full((len(taus), len(groups)), float(init), requires_grad=True)
    opt = torch.optim.Adam([lam], lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for step in range(steps):
        params = {n: base[n] + sum(lam[t, group_of[n]] * tau[n] for t, tau in enumerate(taus))
                  for n in base}
        loss = 0.0
        for task, x in calib.items():
            xb = x[torch.randint(0, len(x), (batch,), generator=gen)]
            p = torch.softmax(heads[task](functional_call(model, params, (xb,))), dim=1)
            loss = loss + -(p * torch.log(p + 1e-8)).sum(1).mean()
        loss = loss / len(calib)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            lam.clamp_(0, 1)
        if step % 50 == 0 or step == steps - 1:
            print(f"merge: adamerging step {step} entropy {loss.item():.4f}", flush=True)
    lam = lam.detach()
    params = {n: base[n] + sum(lam[t, group_of[n]] * tau[n] for t, tau in enumerate(taus))
              for n in base}
    return params, lam, [g for g, _ in groups]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ada-steps", type=int, default=300)
    ap.add_argument("--ada-batch", type=int, default=32)
    ap.add_argument("--ada-lr", type=float, default=1e-3)
    ap.add_argument("--ada-init", type=float, default=None,
                    help="initial lambda (default: TA's lambda chosen on calib)")
    ap.add_argument("--search-limit", type=int, default=None,
                    help="score TA's and TIES's candidates on this many calib images per task (default: all)")
    ap.add_argument("--ta-grid", default=",".join(map(str, TA_GRID)))
    ap.add_argument("--ties-k-grid", default=",".join(map(str, TIES_K_GRID)))
    ap.add_argument("--ties-lambda-grid", default=",".join(map(str, TIES_LAM_GRID)))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    common.setup(args.seed)
    grid = lambda text: [float(v) for v in text.split(",")]  # noqa: E731

    tasks = common.TASKS
    base_model = common.load_backbone("base")
    base = state(base_model)
    buffers = {k: v for k, v in base_model.state_dict().items() if k not in base}
    experts = {t: common.load_backbone(f"expert/{t}") for t in tasks}
    taus = [{k: v - base[k] for k, v in state(experts[t]).items()} for t in tasks]
    heads = {t: common.load_head(t) for t in tasks}
    calib = {t: common.load_split(t, "calib")[0] for t in tasks}
    # The candidates' score uses a seeded random --search-limit images of
    # each task's calib split.
    search = {t: x[common.subset(len(x), args.search_limit, f"search/{t}")] for t, x in calib.items()}
    with torch.no_grad():
        targets = {t: heads[t](common.features(experts[t], search[t])).argmax(1) for t in tasks}
    settings = {"selection": "calib agreement with the experts' predictions (no labels)",
                "task_vectors": task_vector_geometry(base, taus, tasks)}
    print(f"merge: task vectors {settings['task_vectors']}", flush=True)

    with common.Timer("merge/ta"), torch.no_grad():
        scores = {lam: agreement(with_params(task_arithmetic(base, taus, lam), buffers), search, heads, targets)
                  for lam in grid(args.ta_grid)}
        best = max(scores, key=scores.get)
        common.save_backbone(with_params(task_arithmetic(base, taus, best), buffers), "merged/ta")
        settings["ta"] = {"lambda": best, "calib_agreement": scores}
        print(f"merge: ta lambda={best} agreement {scores[best]:.3f}", flush=True)

    with common.Timer("merge/ties"), torch.no_grad():
        scores = {(k, lam): agreement(with_params(ties(base, taus, k, lam), buffers), search, heads, targets)
                  for k in grid(args.ties_k_grid) for lam in grid(args.ties_lambda_grid)}
        k, lam = max(scores, key=scores.get)
        common.save_backbone(with_params(ties(base, taus, k, lam), buffers), "merged/ties")
        settings["ties"] = {"k": k, "lambda": lam,
                            "calib_agreement": {f"k={a},lambda={b}": s for (a, b), s in scores.items()}}
        print(f"merge: ties k={k} lambda={lam} agreement {scores[(k, lam)]:.3f}", flush=True)

    with common.Timer("merge/adamerging"):
        init = settings["ta"]["lambda"] if args.ada_init is None else args.ada_init
        params, lam, group_names = adamerging(base, buffers, taus, calib, heads, args.ada_steps,
                                              args.ada_batch, args.ada_lr, args.seed, init)
        model = with_params({k: v.detach() for k, v in params.items()}, buffers)
        common.save_backbone(model, "merged/adamerging")
        with torch.no_grad():
            score = agreement(model, search, heads, targets)
        settings["adamerging"] = {
            "init": init, "steps": args.ada_steps, "batch_per_task": args.ada_batch,
            "lr": args.ada_lr, "groups": group_names, "calib_agreement": score,
            "lambdas": {t: [round(v, 4) for v in lam[i].tolist()] for i, t in enumerate(tasks)}}
        print(f"merge: adamerging agreement {score:.3f}", flush=True)

    with open(os.path.join(common.settings().work, "merged", "settings.json"), "w") as f:
        json.dump(settings, f, indent=1)


if __name__ == "__main__":
    main()
