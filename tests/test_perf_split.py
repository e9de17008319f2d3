"""bench/perf_split.py, the per-request split of a benchmark's perf profile,
on a small `perf script` text whose answer is worked out by hand: every
table's microseconds per request are the samples' periods summed per row and
divided by the requests, and each sample lands in the row its frames name.
No perf and no Triton needed."""

import subprocess
import sys

import pytest

from testenv import ROOT

TRITON, STUB, LOADGEN = 100, 200, 300
REACT = "/x/bin/backends/react/libtriton_react.so"
BLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"
CORE = "/x/nvidia_pytriton.libs/libtritonserver-717102f0.so"
KERNEL = "[kernel.kallsyms]"


def sample(comm, pid, tid, period, frames):
    """One sample as `perf script -F comm,pid,tid,period,ip,sym,dso` prints
    it, frames from the leaf up."""
    lines = [f"{comm} {pid}/{tid} {period} "]
    lines += [f"\t{0x1000 + i:16x} {sym} ({dso})" for i, (sym, dso) in enumerate(frames)]
    return "\n".join(lines) + "\n\n"


EXECUTE = [("main.TRITONBACKEND_ModelInstanceExecute", REACT), ("runtime.cgocallbackg1", REACT),
           ("crosscall2", REACT), ("TRITONBACKEND_ModelInstanceExecute", REACT)]

SAMPLES = "".join([
    # The react instance thread (101): the SGEMV under the backend's
    # execute, twice; reading a request; an SGEMM whose chain stops short
    # of Go (OpenBLAS keeps no frame pointer); the cgo entry; Triton's own
    # code on the thread.
    sample("tritonserver", TRITON, 101, 500_000, [("0x1976e04", BLAS), ("cblas_sgemv", BLAS),
                                                  ("react.Correct", REACT), ("control.(*Matrix).Apply", REACT),
                                                  ("model.(*Model).correctGroup", REACT), ("model.(*Model).Execute", REACT)]
           + EXECUTE),
    sample("tritonserver", TRITON, 101, 500_000, [("0x1976dde", BLAS), ("cblas_sgemv", BLAS),
                                                  ("react.Correct", REACT)] + EXECUTE),
    sample("tritonserver", TRITON, 101, 250_000, [("runtime.mallocgc", REACT), ("main.(*modelState).readParameters", REACT),
                                                  ("main.(*instanceState).readHost", REACT)] + EXECUTE),
    sample("tritonserver", TRITON, 101, 250_000, [("sgemm_incopy_COOPERLAKE", BLAS), ("[unknown]", "[unknown]")]),
    sample("tritonserver", TRITON, 101, 250_000, [("runtime.exitsyscall", REACT), ("runtime.cgocallbackg", REACT),
                                                  ("runtime.cgocallback.abi0", REACT), ("crosscall2", REACT)]),
    sample("tritonserver", TRITON, 101, 250_000, [("futex_wake", KERNEL), ("pthread_cond_signal", "/lib/libc.so.6")]),
    # Another Triton thread: a dynamic batcher.
    sample("tritonserver", TRITON, 102, 1_000_000, [("triton::core::DynamicBatchScheduler::BatcherThread", CORE)]),
    # A Python stub: its BLAS thread spinning, and its own work.
    sample("triton_python_b", STUB, 201, 2_000_000, [("do_sched_yield", KERNEL), ("__sched_yield", "/lib/libc.so.6")]),
    sample("triton_python_b", STUB, 202, 1_000_000, [("PyEval_EvalFrame", "/lib/libpython3.11.so.1.0")]),
    sample("loadgen", LOADGEN, 301, 500_000, [("main.worker", "/x/loadgen")]),
    sample("swapper", 0, 0, 1_500_000, [("default_idle", KERNEL)]),
])

REQUESTS = 5


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("perf") / "script.txt"
    path.write_text(SAMPLES)
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "perf_split.py"), "--data", "unused", "--pid", str(TRITON),
                          "--requests", str(REQUESTS), "--script", str(path)],
                         capture_output=True, text=True, check=True).stdout
    # {table title: {row: µs per request}}
    result, title = {}, None
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0].startswith("---"):
            continue
        if cells[1] == "µs per request":
            title = cells[0]
            result[title] = {}
        elif title:
            result[title][cells[0].strip("*")] = float(cells[1].strip("*"))
    return result


def us(ns):
    return ns / REQUESTS / 1e3


def test_processes(tables):
    assert tables["process"] == pytest.approx({
        "Triton (tritonserver)": us(3_000_000),
        "Python stubs: BLAS threads in sched_yield": us(2_000_000),
        "Python stubs: the rest": us(1_000_000),
        "load generator": us(500_000),
        "idle": us(1_500_000),
        "all": us(8_000_000)}, abs=0.05)


def test_triton_by_library(tables):
    # The leaf's library: OpenBLAS 1.25 ms, Go 0.5, kernel 0.25, core 1.
    assert tables["Triton's CPU by library"] == pytest.approx({
        "OpenBLAS": us(1_250_000), "libtriton_react (react backend, Go)": us(500_000), "kernel": us(250_000),
        "libtritonserver (core)": us(1_000_000), "all": us(3_000_000)}, abs=0.05)


def test_triton_by_thread(tables):
    assert tables["Triton's CPU by thread"] == pytest.approx({
        "react instance": us(2_000_000), "dynamic batchers": us(1_000_000), "all": us(3_000_000)}, abs=0.05)


def test_react_instance_thread(tables):
    title = next(t for t in tables if t.startswith("the react instance thread"))
    assert "tid 101" in title
    assert tables[title] == pytest.approx({
        "backend: correction: OpenBLAS SGEMV": us(1_000_000),
        "backend: correction: OpenBLAS SGEMM": us(250_000),
        "backend: reading inputs and parameters": us(250_000),
        "Go runtime: entering and leaving Go from Triton's thread (cgocallback)": us(250_000),
        "Triton's code on the instance thread (and the backend's C calls into it)": us(250_000),
        "all": us(2_000_000)}, abs=0.05)
