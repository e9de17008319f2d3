"""The table of a bench/abuse.sh run, from its JSON lines.

    .venv/bin/python bench/abuse_table.py bench/results/abuse-DATE.jsonl

One row per window (the spin window is a calibration, no sidecar load: a
process burning one core at nice 19): the well-behaved client's requests, failures, p50 and
p99 (and p99 against the baseline's); the probes' requests and answers;
the sidecar's CPU seconds in the window and in the quiet period after it
(against the baseline's quiet period), its peak RSS, and what it still
held at the end of the quiet period (goroutines, solves running and
pending, request bytes). Then the issue's targets, each met or missed.
"""

import json
import sys


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
          "| sidecar CPU s (window) | CPU s after (quiet) | peak RSS MiB | left after: goroutines, solves, bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
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
        if w["window"] == "baseline":
            base = {"p99": g["p99_ms"], "cpu_after": cpu_after}
        ratio = g["p99_ms"] / base["p99"] if base and g["p99_ms"] and base["p99"] else None
        rows.append({"name": w["window"], "errors": g["errors"] + g["warmup_errors"], "ratio": ratio, "rss": rss,
                     "cpu_after": cpu_after, "requests": requests})
        print(f"| {w['window']} | {g['requests']} | {g['errors']} | {g['p50_ms']:.2f} | {g['p99_ms']:.2f} | "
              f"{'—' if ratio is None else f'{ratio:.2f}'} | {requests} | "
              f"{', '.join(f'{k} {v}' for k, v in sorted(answers.items())) or '—'} | {cpu_window:.2f} | {cpu_after:.3f} | "
              f"{rss:.0f} | {left} |")
    print()
    quiet_base = base["cpu_after"] if base else 0.0
    spin = next((r["ratio"] for r in rows if r["name"] == "spin"), None)
    checks = []
    for r in rows:
        if r["name"] in ("baseline", "spin"):
            continue
        measured = f"{r['ratio']:.2f}x" if r["ratio"] else "no p99"
        if spin:
            measured += f" (a nice-19 spinner alone: {spin:.2f}x)"
        checks.append((f"{r['name']}: well-behaved p99 within 2x the baseline's", r["ratio"] is not None and r["ratio"] <= 2,
                       measured))
        checks.append((f"{r['name']}: no failed well-behaved request", r["errors"] == 0, f"{r['errors']} failed"))
        if r["name"] in ("hangups", "deadlines", "inputs"):
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
