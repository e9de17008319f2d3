"""Live sampling end to end (issue 26's first proof), against the real
Triton of scripts/test.sh serving the demo zoo (tritonmodels/repo).

A sidecar with no components file and no controllable model, serving
pass-through only, with sampling on at fraction 1 for the fashion and
mnist ensembles, is driven with the calibration split's inputs as traffic
(the official tritonclient, gRPC). At shutdown it writes its live file; the
statistics in it must equal those calibrate fit --triton computes on the
same inputs, within 1e-9 relative.

The features are the same bits when Triton runs the same batches: the
traffic is sent in calibrate's chunks, one request at a time, and each
request's sample (backbone and expert calls) finishes before the next
request is sent, so that Triton's dynamic batcher never merges a sample's
call with another call; calibrate fit runs with --in-flight 1.

Needs TRITON_GRPC_ADDR and TRITON_HTTP_ADDR (exported by scripts/test.sh),
the zoo models loaded in that Triton and the zoo data. Without them the
test skips, or fails when REACT_E2E=1.
"""

import subprocess

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from safetensors import safe_open
from safetensors.numpy import load_file

from sidecar_helpers import Sidecar, config_text, metric, scrape, wait_for
from testenv import calib_images, env, manifest, need_models

BACKBONE = "backbone_adamerging"
TASKS = ["fashion", "mnist"]
N = 150  # samples per task: with the chunk below, the last request is partial
CHUNK = 64
RTOL = 1e-9


@pytest.fixture(scope="module")
def triton(triton_addr):
    need_models(triton_addr, [BACKBONE] + TASKS + [f"expert_{t}" for t in TASKS])
    return triton_addr, env("TRITON_HTTP_ADDR")


def _config(triton, live_dir):
    grpc, http = triton
    return {
        "triton": {"grpc": grpc, "http": http, "startup_timeout": "60s"},
        "listen": {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", "metrics": "127.0.0.1:0", "shutdown_timeout": "10s"},
        "sampling": {
            "enabled": True, "fraction": 1, "replica": "e2e-0", "max_concurrent": 4,
            "checkpoint": {"dir": str(live_dir), "interval": "1h", "window": "24h"},
            "backbone": {"model": BACKBONE, "output": "feature"},
            "models": [{"name": t, "task": t} for t in TASKS],
            "tasks": [{"name": t, "expert": {"model": f"expert_{t}"}} for t in TASKS],
        },
    }


def test_live_sampling_equals_fit(triton, calibrate, sidecar_bin, tmp_path):
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    cfg = tmp_path / "sidecar.yaml"
    cfg.write_text(config_text(_config(triton, live_dir)))
    sidecar = Sidecar(cfg, tmp_path).start()
    images = {task: calib_images(task, N) for task in TASKS}
    try:
        wait_for("sampling on in the log", lambda: 'msg="sampling on"' in sidecar.log(), timeout=60)
        client = grpcclient.InferenceServerClient(sidecar.grpc)
        sent = 0
        for task in TASKS:
            x = images[task]
            for start in range(0, len(x), CHUNK):
                batch = x[start:start + CHUNK]
                inp = grpcclient.InferInput("image", list(batch.shape), "FP32")
                inp.set_data_from_numpy(batch)
                client.infer(task, [inp])
                sent += 1
                # The sample done before the next request: the same batches
                # as calibrate's reach Triton, never merged with another.
                wait_for("the request's sample", lambda: _sampled(sidecar) == sent, timeout=60)
        samples = scrape(sidecar.metrics)
        for task in TASKS:
            skipped = metric(samples, "react_sampling_skipped_total", model=task)
            assert skipped == 0, f"{task}: {skipped} requests not sampled"
    finally:
        status = sidecar.stop()
    assert status == 0, f"the sidecar exited with {status}:\n{sidecar.log()}"
    files = sorted(live_dir.glob("*.live.safetensors"))
    assert len(files) == 1 and files[0].name.startswith("e2e-0."), f"live files: {files}\n{sidecar.log()}"
    live = load_file(str(files[0]))
    with safe_open(str(files[0]), framework="numpy") as f:
        live_meta = f.metadata()

    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for task in TASKS:
        np.save(inputs / f"{task}.npy", images[task])
    out = tmp_path / "fit.safetensors"
    cmd = [str(calibrate), "fit", "--triton", triton[0], "--inputs", str(inputs), "--backbone-model", BACKBONE,
           "--backbone-output", "feature", "--tasks", ",".join(TASKS), "--chunk", str(CHUNK), "--in-flight", "1",
           "--quiet", "--out", str(out)] + [f"--expert={t}=expert_{t}" for t in TASKS]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"calibrate fit failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    fit = load_file(str(out))
    with safe_open(str(out), framework="numpy") as f:
        fit_meta = f.metadata()

    D = manifest()["D"]
    assert live_meta["d"] == str(D)
    for task in TASKS:
        assert live_meta[f"task.{task}.n"] == fit_meta[f"task.{task}.n"] == str(len(images[task]))
        for kind in ("S", "G"):
            got, want = live[f"{task}.{kind}"], fit[f"{task}.{kind}"]
            if kind == "G":  # the live file holds G's upper triangle
                got, want = np.triu(got), np.triu(want)
            err = np.abs(got - want).max() / np.abs(want).max()
            assert err <= RTOL, f"{task}.{kind}: relative error {err:.3g} against calibrate fit --triton (want <= {RTOL})"


def _sampled(sidecar):
    """react_sampling_requests_total summed over the models."""
    samples = scrape(sidecar.metrics)
    return sum(metric(samples, "react_sampling_requests_total", model=t, task=t) or 0 for t in TASKS)
