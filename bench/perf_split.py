#!/usr/bin/env python3
"""Where the CPU of one benchmark run went, per request, from a perf profile.

    perf_split.py --data PERF.DATA --pid TRITON_PID --requests N [--title T]
                  [--script FILE]

Reads a whole-machine profile with call graphs (perf record -a -g -e
cpu-clock, as bench/sidecar-controllable.sh --perf takes it) through
`perf script`, and prints markdown tables of CPU time per request (each
sample's period summed, divided by N, the requests answered while it ran):

1. by process: Triton (tritonserver), its Python backend stubs (their
   numpy's BLAS threads waiting in sched_yield apart from their work), the
   load generator, the rest, and idle;
2. Triton's own CPU by library (kernel, libtritonserver, the server binary,
   the Python backend's driver, the react backend's Go code, OpenBLAS, the C
   and C++ runtimes);
3. Triton's CPU by thread, each thread named by the code it runs most
   (a step's instance, the Python backend's threads, the dynamic batcher,
   the gRPC front end, the Go runtime's own threads, the rest);
4. when the profile has the react backend's TRITONBACKEND_ModelInstanceExecute,
   the react instance's thread (the thread with most samples in it): the
   backend's work by what it does (the correction's SGEMV, reading inputs and
   parameters, resolving and grouping, output buffers, sending responses,
   statistics, releasing requests, the Go runtime's cgo entry and exit) and
   the thread's time outside the backend (Triton's code around the
   execution and the C calls the backend makes, whose call chains stop at
   Triton's frames, which have no frame pointers).

--script reads a saved `perf script -F comm,pid,tid,period,ip,sym,dso`
output instead of running perf (tests/test_perf_split.py).

The requests are the load generator's over its measured window; the profile
covers the same seconds, started after the warmup, so the per-request numbers
are as exact as the two windows' alignment (a few milliseconds in seconds).
"""

import argparse
import collections
import subprocess
import sys

# The react instance thread's categories: the first frame (from the leaf)
# that names one, among the Go frames under the backend's execute.
REACT_CATEGORIES = [
    ("control.(*Matrix).Apply", "correction: other"),
    ("main.(*instanceState).readHost", "reading inputs and parameters"),
    ("main.(*modelState).readParameters", "reading inputs and parameters"),
    ("main.(*modelState).output", "output buffers (ResponseOutput, OutputBuffer)"),
    ("main.(*instanceState).send", "sending responses (parameters, ResponseSend)"),
    ("_Cfunc_TRITONBACKEND_ResponseNew", "ResponseNew"),
    ("_Cfunc_TRITONBACKEND_ModelInstanceReport", "statistics (ReportStatistics)"),
    ("_Cfunc_TRITONBACKEND_RequestRelease", "RequestRelease"),
    ("_Cfunc_now_ns", "clock reads"),
    ("model.(*Model).Execute", "resolving, checking, grouping, decoding"),
    ("main.(*metrics)", "experiment metrics"),
    ("runtime.", "Go runtime (allocation, cgo checks, scheduling)"),
]
EXECUTE = "main.TRITONBACKEND_ModelInstanceExecute"
CGO_ENTRY = ("runtime.cgocallback", "crosscall2")


def samples(stream):
    """Yields (pid, tid, comm, period, frames) of each sample; frames are
    (symbol, dso) from the leaf up."""
    head, frames = None, []
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            if head:
                yield (*head, frames)
            head, frames = None, []
            continue
        if not line[0].isspace():
            # "comm pid/tid period": comm may hold spaces.
            parts = line.split()
            period = int(parts[-1])
            pid, tid = (int(x) for x in parts[-2].split("/"))
            head = (pid, tid, " ".join(parts[:-2]), period)
            frames = []
            continue
        text = line.strip()
        _, _, rest = text.partition(" ")
        sym, _, dso = rest.rpartition(" (")
        frames.append((sym, dso.rstrip(")")))
    if head:
        yield (*head, frames)


def library(dso):
    base = dso.rsplit("/", 1)[-1]
    if base.startswith("[kernel"):
        return "kernel"
    for prefix, name in (("libtritonserver", "libtritonserver (core)"), ("tritonserver", "tritonserver (front ends)"),
                         ("libtriton_python", "libtriton_python (Python backend driver)"),
                         ("libtriton_react", "libtriton_react (react backend, Go)"),
                         ("libtriton_identity", "libtriton_identity (identity backend)"),
                         ("libopenblas", "OpenBLAS"), ("libc.so", "libc"), ("libstdc++", "libstdc++"),
                         ("libgomp", "libgomp"), ("[vdso]", "vdso")):
        if base.startswith(prefix):
            return name
    return "other (" + base + ")" if base and base != "[unknown]" else "unknown"


# A Triton thread's role: the first marker found in most of its samples.
THREAD_MARKERS = [
    (lambda names, dsos: EXECUTE in names, "react instance"),
    (lambda names, dsos: any("libtriton_identity" in d for d in dsos), "identity instance"),
    (lambda names, dsos: any("libtriton_python" in d for d in dsos), "Python backend (instances, IPC)"),
    (lambda names, dsos: any("BatcherThread" in n for n in names), "dynamic batchers"),
    (lambda names, dsos: any("Ensemble" in n for n in names), "ensemble scheduling"),
    (lambda names, dsos: any("grpc" in n for n in names), "gRPC front end"),
    (lambda names, dsos: any("libtriton_react" in d for d in dsos), "Go runtime's threads (sysmon, GC, idle Ms)"),
]


def thread_role(samples_of_thread):
    votes = collections.Counter()
    for period, names, dsos in samples_of_thread:
        for test, role in THREAD_MARKERS:
            if test(names, dsos):
                votes[role] += period
                break
    return votes.most_common(1)[0][0] if votes else "other Triton threads"


def react_category(names):
    for key, name in REACT_CATEGORIES:
        if any(key in n for n in names):
            return name
    return "backend, other"


def table(title, counts, requests, total=None):
    print(f"\n| {title} | µs per request | share |")
    print("|---|---:|---:|")
    total = total if total is not None else sum(counts.values())
    for key, ns in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"| {key} | {ns / requests / 1e3:.1f} | {100 * ns / total:.1f}% |" if total else f"| {key} | — | — |")
    print(f"| **all** | **{sum(counts.values()) / requests / 1e3:.1f}** | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--pid", type=int, required=True, help="tritonserver's process id")
    ap.add_argument("--requests", type=int, required=True, help="requests answered in the profile's window")
    ap.add_argument("--title", default="")
    ap.add_argument("--script", help="read this perf script output instead of running perf script")
    args = ap.parse_args()
    if args.requests <= 0:
        sys.exit("perf_split: --requests must be positive")
    if args.script:
        stream = open(args.script)
    else:
        proc = subprocess.Popen(["perf", "script", "-i", args.data, "-F", "comm,pid,tid,period,ip,sym,dso"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
        stream = proc.stdout

    by_process = collections.Counter()
    triton_libs = collections.Counter()
    react_tid_hits = collections.Counter()
    per_tid = collections.defaultdict(list)  # tid -> [(period, names)] of tritonserver
    total = 0
    for pid, tid, comm, period, frames in samples(stream):
        total += period
        names = [s for s, _ in frames]
        if pid == 0:
            by_process["idle"] += period
        elif pid == args.pid:
            by_process["Triton (tritonserver)"] += period
            triton_libs[library(frames[0][1]) if frames else "unknown"] += period
            per_tid[tid].append((period, names, [d for _, d in frames]))
            if EXECUTE in names:
                react_tid_hits[tid] += period
        elif comm.startswith("triton_python"):
            spin = any(n in ("do_sched_yield", "__sched_yield", "__x64_sys_sched_yield") for n in names)
            by_process["Python stubs: BLAS threads in sched_yield" if spin else "Python stubs: the rest"] += period
        elif comm == "loadgen":
            by_process["load generator"] += period
        else:
            by_process["other processes (" + comm + ")" if comm in ("sidecar",) else "other processes"] += period
    if not args.script and proc.wait() != 0:
        sys.exit("perf_split: perf script failed")
    if total == 0:
        sys.exit("perf_split: no samples")

    if args.title:
        print(f"### {args.title}")
    seconds = total / 1e9
    print(f"\n{args.requests} requests; {seconds:.2f} CPU-seconds sampled (all CPUs, idle included).")
    table("process", by_process, args.requests, total)
    table("Triton's CPU by library", triton_libs, args.requests)

    roles = collections.Counter()
    for tid, ss in per_tid.items():
        roles[thread_role(ss)] += sum(period for period, _, _ in ss)
    table("Triton's CPU by thread", roles, args.requests)

    if react_tid_hits:
        tid = react_tid_hits.most_common(1)[0][0]
        cats = collections.Counter()
        for period, names, dsos in per_tid[tid]:
            if any("libopenblas" in d for d in dsos):
                # OpenBLAS' level-3 kernels keep no frame pointer: their
                # chains often stop short of the Go caller.
                kind = "SGEMV" if any("sgemv" in n for n in names) else "SGEMM" if any("sgemm" in n for n in names) else "other"
                cats["backend: correction: OpenBLAS " + kind] += period
            elif EXECUTE in names:
                names_under = names[:names.index(EXECUTE)]
                cats["backend: " + react_category(names_under)] += period
            elif any(n.startswith(CGO_ENTRY) for n in names):
                cats["Go runtime: entering and leaving Go from Triton's thread (cgocallback)"] += period
            elif dsos and "libtriton_react" in dsos[0]:
                cats["backend: " + react_category(names)] += period
            else:
                cats["Triton's code on the instance thread (and the backend's C calls into it)"] += period
        table(f"the react instance thread (tid {tid})", cats, args.requests)


if __name__ == "__main__":
    main()
