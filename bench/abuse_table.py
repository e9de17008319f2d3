"""The table of a bench/abuse.sh run, from its JSON lines.

    .venv/bin/python bench/abuse_table.py bench/results/abuse-DATE.jsonl

One row per window: the well-behaved client's requests, failures, p50 and
p99 (and p99 against the baseline's); the probes' requests and answers;
the sidecar's CPU seconds in the window and in the quiet period after it
(against the baseline's quiet period), its peak RSS, its solves and
formations of W_p in the window and the quiet period (when the run
recorded them), and what it still held at the end of the quiet period
(goroutines, solves running and pending, request bytes). Then the issue's
targets, each met or missed.

The reference windows are read against, not held to the targets: the
calibrations, with no load on the sidecar, spin (a process burning one
core at nice 19), membw (one streaming over more memory than the
last-level cache at nice 19) and solves (the sidecar's solve code in a
process of its own at nice 10, at about the flood's rate); and
flood-apart (the flood's request traffic over cached preferences, with
the solves of the solves window beside it). The spin and membw factors
stand beside every probe's; the solves and flood-apart ones beside the
floods whose new preferences are solved (not flood-presets).
"""

import json
import sys

# REFERENCES are the windows read against, not held to the targets, and
# how the targets' column names each; FLOOD_ONLY are those shown beside the
# floods whose new preferences the sidecar solves (SOLVED) alone.
REFERENCES = {"spin": "a nice-19 spinner alone", "membw": "a nice-19 memory streamer alone",
              "solves": "the flood's solves alone at nice 10",
              "flood-apart": "its requests and solves apart"}
FLOOD_ONLY = ("solves", "flood-apart")
SOLVED = ("flood", "deadlines", "flood-keyrate", "flood-solverate", "flood-template", "deadlines-template")


def counter(samples, name):
    """How much a summed counter of the watcher grew over samples; None when not recorded."""
    seen = [s[name] for s in samples if name in s]
    return seen[-1] - seen[0] if len(seen) > 1 else None


def calibration_answers(probes):
    """What a calibration window's neighbour did, in words."""
    out = []
    for p in probes:
        if p.get("mode") == "membw":
            out.append(f"{p['read_gb_s']:.1f} GB/s over {p['buffer_mib']} MiB")
        elif p.get("mode") == "solves":
            formed = f", {p['formed']} formed ({p['form_ms']:.0f} ms)" if p.get("formed") else ""
            out.append(f"{p['solves']} solves, {p['solves_per_s']:.1f}/s, {p['factor_ms']:.0f} ms each{formed}, "
                       f"nice {'/'.join(str(n) for n in p['thread_nice'])}")
    return ", ".join(out)


def main(path):
    run, windows = {}, []
    for line in open(path):
        r = json.loads(line)
        if "run" in r:
            run = r["run"]
        elif "window" in r:
            windows.append(r)
    seconds, budget = run["duration_s"], run["budget_mib"]
    print(f"Run {run['date']}, {run['nproc']} cores ({run['cpu']}), load average {run['loadavg']} at the start, "
          f"{seconds} s windows and {run['quiet_s']} s quiet after each, memory budget {budget} MiB (GOMEMLIMIT), "
          f"{run['go']}, commit {run['commit']}.\n")
    print("| window | good requests | good failures | p50 ms | p99 ms | p99 ÷ baseline | probe requests | probe answers "
          "| sidecar CPU s (window) | CPU s after (quiet) | peak RSS MiB | sidecar solves, formed | "
          "left after: goroutines, solves, bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|")
    base = None
    rows = []
    for w in windows:
        g, samples = w["good"], w["samples"]
        inside = [s for s in samples if s["t"] <= seconds]
        after = [s for s in samples if s["t"] >= seconds]
        cpu_window = inside[-1]["cpu_s"] - inside[0]["cpu_s"]
        cpu_after = after[-1]["cpu_s"] - after[0]["cpu_s"] if len(after) > 1 else 0.0
        rss = max(s["rss_bytes"] for s in samples) / 2**20
        last = samples[-1]
        left = (f"{last.get('go_goroutines', float('nan')):.0f}, "
                f"{last.get('react_wp_solves_running', 0) + last.get('react_wp_solves_pending', 0):.0f}, "
                f"{last.get('react_inflight_request_bytes', 0):.0f}")
        requests = sum(p["requests"] for p in w["probes"])
        answers = {}
        for p in w["probes"]:
            for k, v in (p.get("answers") or p.get("codes") or {}).items():
                answers[k] = answers.get(k, 0) + v
        answered = ", ".join(filter(None, [", ".join(f"{k} {v}" for k, v in sorted(answers.items())),
                                           calibration_answers(w["probes"])])) or "—"
        solved, formed = (counter(samples, f"react_wp_{n}_duration_seconds_count") for n in ("solve", "form"))
        work = "—" if solved is None else f"{solved:.0f}, {formed or 0:.0f}"
        if w["window"] == "baseline":
            base = {"p99": g["p99_ms"], "cpu_after": cpu_after}
        ratio = g["p99_ms"] / base["p99"] if base and g["p99_ms"] and base["p99"] else None
        rows.append({"name": w["window"], "errors": g["errors"] + g["warmup_errors"], "ratio": ratio, "rss": rss,
                     "cpu_after": cpu_after, "requests": requests})
        print(f"| {w['window']} | {g['requests']} | {g['errors']} | {g['p50_ms']:.2f} | {g['p99_ms']:.2f} | "
              f"{'—' if ratio is None else f'{ratio:.2f}'} | {requests} | "
              f"{answered} | {cpu_window:.2f} | {cpu_after:.3f} | "
              f"{rss:.0f} | {work} | {left} |")
    print()
    quiet_base = base["cpu_after"] if base else 0.0
    floors = {r["name"]: r["ratio"] for r in rows if r["name"] in REFERENCES and r["ratio"]}
    checks = []
    for r in rows:
        if r["name"] == "baseline" or r["name"] in REFERENCES:
            continue
        measured = f"{r['ratio']:.2f}x" if r["ratio"] else "no p99"
        beside = [f"{REFERENCES[n]}: {f:.2f}x" for n, f in floors.items() if n not in FLOOD_ONLY or r["name"] in SOLVED]
        if beside:
            measured += f" ({'; '.join(beside)})"
        checks.append((f"{r['name']}: well-behaved p99 within 2x the baseline's", r["ratio"] is not None and r["ratio"] <= 2,
                       measured))
        checks.append((f"{r['name']}: no failed well-behaved request", r["errors"] == 0, f"{r['errors']} failed"))
        if r["name"] in ("hangups", "deadlines", "deadlines-template", "inputs"):
            extra = r["cpu_after"] - quiet_base
            checks.append((f"{r['name']}: CPU after the clients left, beyond the baseline's quiet period, under 100 ms "
                           f"(so under 100 ms per request)", extra <= 0.1, f"{extra * 1000:.0f} ms in all"))
        if r["name"].startswith("flood"):
            checks.append((f"{r['name']}: peak RSS within the budget + 100 MB ({budget} MiB + 95 MiB)",
                           r["rss"] <= budget + 100e6 / 2**20, f"{r['rss']:.0f} MiB"))
    print("| target | met | measured |")
    print("|---|---|---|")
    for what, ok, measured in checks:
        print(f"| {what} | {'yes' if ok else '**no**'} | {measured} |")


if __name__ == "__main__":
    main(sys.argv[1])
