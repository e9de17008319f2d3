"""`calibrate fit --triton` survives a SIGKILL, a Triton restart, shards and
one task at a time, end to end against the real Triton of scripts/test.sh
serving the demo zoo (tritonmodels/repo).

Every test compares with an uninterrupted fit over the same inputs and
settings; --in-flight 1 keeps each model's requests apart, so that Triton's
dynamic batcher never joins two of them and the features, and so the sums,
are the same bits in every run:
- a fit killed with SIGKILL half-way, then run again with --resume, writes
  the same file, byte for byte;
- so does a fit during which a Triton of its own (scripts/triton-up on free
  ports) is stopped and started again: the requests are retried;
- --only TASK --into FILE, task after task, builds the same file;
- --shard i/4 for i = 0..3, added by calibrate merge, gives the same
  statistics to float64 rounding.

Needs TRITON_GRPC_ADDR (exported by scripts/test.sh), the zoo models, the
zoo data (.cache/zoo-data, or ZOO_DATA) and go; without them the tests
skip, or fail when REACT_E2E=1.
"""

import pathlib
import signal
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from sidecar_helpers import free_ports
from testenv import ROOT, ZOO_REPO, calib_images, need, need_models

BACKBONE = "backbone_adamerging"
TASKS = ["fashion", "mnist", "digits"]
CHUNK = 8
# Samples per task, as tests/test_calibrate_triton.py takes them.
N = 301


@pytest.fixture(scope="module")
def triton_addr(triton_addr):
    """The Triton of scripts/test.sh, serving the backbone and the experts."""
    need_models(triton_addr, [BACKBONE] + [f"expert_{t}" for t in TASKS])
    return triton_addr


def _images(task):
    return calib_images(task, N)


def _inputs(tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for task in TASKS:
        np.save(inputs / f"{task}.npy", _images(task))
    return inputs


def _fit(calibrate, addr, inputs, out, *extra):
    cmd = [str(calibrate), "fit", "--triton", addr, "--inputs", str(inputs), "--backbone-model", BACKBONE,
           "--tasks", ",".join(TASKS), "--chunk", str(CHUNK), "--in-flight", "1", "--checkpoint-every", "1",
           "--out", str(out), *extra]
    cmd += [f"--expert={task}=expert_{task}" for task in TASKS]
    return cmd


def _run(cmd):
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return run


def _wait_for_checkpoint(ckpt, proc, count=1, timeout=120):
    """Waits until ckpt holds count task checkpoints."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ckpt.is_dir() and len(list(ckpt.glob("*.safetensors"))) >= count:
            return
        assert proc.poll() is None, f"the fit ended ({proc.returncode}) before its checkpoint appeared"
        time.sleep(0.02)
    pytest.fail(f"no checkpoint in {ckpt} after {timeout}s")


@pytest.fixture(scope="module")
def uninterrupted(triton_addr, calibrate, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("uninterrupted")
    inputs = _inputs(tmp)
    out = tmp / "components.safetensors"
    _run(_fit(calibrate, triton_addr, inputs, out, "--quiet"))
    return inputs, out.read_bytes()


def test_sigkill_then_resume_is_bit_identical(triton_addr, calibrate, uninterrupted, tmp_path):
    inputs, want = uninterrupted
    out = tmp_path / "components.safetensors"
    cmd = _fit(calibrate, triton_addr, inputs, out)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_checkpoint(pathlib.Path(str(out) + ".ckpt"), proc, count=2)  # in the middle of the second task
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists(), "the killed fit wrote its output"
    refused = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "add --resume to continue it" in refused.stderr, refused.stderr
    run = _run(cmd + ["--resume"])
    assert "resuming at" in run.stderr  # log lines without a terminal
    assert out.read_bytes() == want, "the resumed fit's file differs from the uninterrupted fit's"
    assert not pathlib.Path(str(out) + ".ckpt").exists()


def test_triton_restart_mid_fit(calibrate, uninterrupted, tmp_path):
    """A Triton of our own, with only the models the fit needs, stopped and
    started again on the same ports while the fit runs."""
    inputs, want = uninterrupted
    models = [BACKBONE] + [f"expert_{t}" for t in TASKS]
    ports = [str(p) for p in free_ports(3)]
    pid = tmp_path / "triton.pid"
    up = [str(ROOT / "scripts" / "triton-up"), "--repo", str(ZOO_REPO),
          "--grpc-port", ports[0], "--http-port", ports[1], "--metrics-port", ports[2],
          "--log", str(tmp_path / "triton.log"), "--pid", str(pid), "--timeout", "300",
          "--", "--model-control-mode=explicit", *[f"--load-model={m}" for m in models]]
    down = [str(ROOT / "scripts" / "triton-down"), "--pid", str(pid), "--grace", "10"]
    started = subprocess.run(up, capture_output=True, text=True, timeout=400)
    need(started.returncode == 0, f"scripts/triton-up failed:\n{started.stdout}\n{started.stderr}")
    try:
        out = tmp_path / "components.safetensors"
        addr = f"127.0.0.1:{ports[0]}"
        proc = subprocess.Popen(_fit(calibrate, addr, inputs, out, "--retry-max-wait", "5m"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_checkpoint(pathlib.Path(str(out) + ".ckpt"), proc, count=1)
        subprocess.run(down, capture_output=True, text=True, timeout=120, check=True)
        time.sleep(1)
        restarted = subprocess.run(up, capture_output=True, text=True, timeout=400)
        assert restarted.returncode == 0, f"Triton did not restart:\n{restarted.stderr}"
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"the fit failed across the restart ({proc.returncode}):\n{stdout}\n{stderr}"
        assert "retrying in" in stderr, "the fit never saw Triton go away: the restart came too late"
        assert out.read_bytes() == want, "the fit across a Triton restart differs from the uninterrupted fit"
    finally:
        subprocess.run(down, capture_output=True, text=True, timeout=120)


def test_only_into_task_by_task(triton_addr, calibrate, uninterrupted, tmp_path):
    inputs, want = uninterrupted
    out = tmp_path / "components.safetensors"
    first = _fit(calibrate, triton_addr, inputs, out, "--quiet")
    first = [a for a in first if not a.startswith("--expert=") or a == f"--expert={TASKS[0]}=expert_{TASKS[0]}"]
    first[first.index("--tasks") + 1] = TASKS[0]
    _run(first)
    for task in TASKS[1:]:
        cmd = _fit(calibrate, triton_addr, inputs, out, "--quiet", "--only", task, "--into", str(out))
        i = cmd.index("--tasks")
        del cmd[i:i + 2]
        _run(cmd)
    assert out.read_bytes() == want, "the file built with --only task by task differs from one fit of every task"


def test_shards_merged_equal_one_fit(triton_addr, calibrate, uninterrupted, tmp_path):
    inputs, want_bytes = uninterrupted
    whole = tmp_path / "whole.safetensors"
    whole.write_bytes(want_bytes)
    parts = []
    for i in range(4):
        part = tmp_path / f"part{i}.safetensors"
        _run(_fit(calibrate, triton_addr, inputs, part, "--quiet", "--shard", f"{i}/4"))
        parts.append(str(part))
    merged = tmp_path / "merged.safetensors"
    _run([str(calibrate), "merge", *parts, "--out", str(merged)])
    got, want = load_file(str(merged)), load_file(str(whole))
    assert sorted(got) == sorted(want)
    for name in want:
        scale = np.abs(want[name]).max()
        if name.endswith(".W_orth"):
            np.testing.assert_allclose(got[name], want[name], atol=1e-9)
        else:
            assert np.abs(got[name] - want[name]).max() <= 1e-12 * scale, name
