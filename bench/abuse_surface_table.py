"""The front door's tables of a bench/abuse-surface.sh run, from its JSON
lines (bench/abuse_table.py prints the well-behaved client's).

    .venv/bin/python bench/abuse_surface_table.py bench/results/abuse-surface-DATE.jsonl

The management calls and how many got through; for each kind of slow or
idle connection, how long the sidecar let it live against the timeout
configured for it; the answers by header size; the connections over the
cap. Then the targets, each met or missed.
"""

import json
import sys

# Which configured timeout ends each kind of connection of the slow probe.
TIMEOUT_OF = {
    "idle_tcp": "read_header_timeout_s",
    "slow_headers": "read_header_timeout_s",
    "slow_body": "read_timeout_s",
    "keepalive_idle": "idle_timeout_s",
    "grpc_call_no_request": "read_timeout_s",
    "grpc_conn_idle": "idle_timeout_s",
}
SLACK_S = 1.5  # a timeout is met when the connection ends within it and this


def main(path):
    run, windows, end = {}, {}, {}
    for line in open(path):
        r = json.loads(line)
        if "run" in r:
            run = r["run"]
        elif "window" in r:
            windows[r["window"]] = r
        elif "end" in r:
            end = r["end"]
    limits = run["limits"]
    checks = []

    m = windows["management"]["probes"][0]
    through = sum(m["succeeded"].values())
    print(f"Management window: {m['requests']} calls of Triton's management API "
          f"({len(m['answers'])} kinds of answer: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(m['answers'].items()))}); let through: {through}.\n")
    checks.append(("0 management calls succeed with the default configuration", through == 0,
                   f"{through} of {m['requests']}" + (f": {m['succeeded']}" if through else "")))
    if "head_fashion_ready" in end:
        checks.append(("the head the unloads aimed at is still loaded in Triton afterwards", end["head_fashion_ready"],
                       str(end["head_fashion_ready"]).lower()))

    s = windows["slow"]["probes"][0]
    print("| connection (50 of each) | ended by | configured s | opened | ended | still open | first s | median s | last s | answers |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for kind in TIMEOUT_OF:
        k = s["kinds"][kind]
        limit = limits[TIMEOUT_OF[kind]]
        fmt = lambda v: f"{v:.2f}" if v is not None else "—"  # noqa: E731
        print(f"| {kind} | {TIMEOUT_OF[kind][:-2]} | {limit} | {k['opened']} | {k['closed']} | {k['open_at_end']} | "
              f"{fmt(k.get('min_s'))} | {fmt(k.get('p50_s'))} | {fmt(k.get('max_s'))} | "
              f"{', '.join(f'{a} {n}' for a, n in sorted((k.get('answers') or {}).items()))} |")
        ok = k["opened"] > 0 and k["open_at_end"] == 0 and k.get("max_s", 1e9) <= limit + SLACK_S \
            and k.get("min_s", 0) >= limit - 0.5
        checks.append((f"slow: {kind} ended at {TIMEOUT_OF[kind][:-2]} ({limit} s)", ok,
                       f"{k['closed']}/{k['opened']} ended, between {fmt(k.get('min_s'))} and {fmt(k.get('max_s'))} s"))
    print()

    h = windows["headers"]["probes"][0]
    sizes = sorted({k.split()[0] for k in h["answers"]}, key=lambda x: int(x[:-2]))
    routes = sorted({k.split()[1] for k in h["answers"]})
    print("| cookie | " + " | ".join(routes) + " |")
    print("|---|" + "---|" * len(routes))
    for size in sizes:
        cells = []
        for r in routes:
            got = {k.split()[2]: v for k, v in h["answers"].items() if k.split()[:2] == [size, r]}
            cells.append(", ".join(f"{a} {n}" for a, n in sorted(got.items())))
        print(f"| {size} | " + " | ".join(cells) + " |")
    print()
    mixed = [f"{size} {r}" for size in sizes for r in routes
             if len({k.split()[2] for k in h["answers"] if k.split()[:2] == [size, r]}) > 1]
    bad = [k for k in h["answers"] if k.split()[2] in ("413", "500", "Internal", "ResourceExhausted", "Unknown", "error")]
    checks.append(("headers: one answer per size and route (no answer at random)", not mixed, ", ".join(mixed) or "none mixed"))
    checks.append(("headers: no 413, 500, INTERNAL or RESOURCE_EXHAUSTED", not bad, ", ".join(bad) or "none"))

    c = windows["conns"]["probes"][0]
    print("Conns window: " + ", ".join(f"{k} {v}" for k, v in sorted(c["answers"].items())) + ".\n")

    print("| target | met | measured |")
    print("|---|---|---|")
    for what, ok, measured in checks:
        print(f"| {what} | {'yes' if ok else '**no**'} | {measured} |")


if __name__ == "__main__":
    main(sys.argv[1])
