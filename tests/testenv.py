"""Where the end-to-end tests find the checkout, its zoo and data, and the
servers scripts/test.sh starts; and the one rule for what a test needs.

Nothing here reads the environment when imported: the paths below are the
checkout's own, and what the environment may change (the zoo data, the
addresses) is read by the functions when a test calls them.
"""

import functools
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ZOO = ROOT / "tritonmodels" / "zoo"
ZOO_REPO = ROOT / "tritonmodels" / "repo"
TEST_REPO = ROOT / "triton" / "testdata" / "repo"
DEPLOYTEST = ROOT / "docker" / "deploytest"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PERF_ANALYZER = ROOT / ".venv" / "bin" / "perf_analyzer"


def missing(message):
    """Skips the test, or fails it under REACT_E2E=1 (scripts/test.sh, CI),
    because something it needs is missing."""
    if os.environ.get("REACT_E2E") == "1":
        pytest.fail(message)
    pytest.skip(message)


def need(ok, message):
    """missing(message) unless ok."""
    if not ok:
        missing(message)


def env(name):
    """The value of an environment variable scripts/test.sh sets, or missing."""
    value = os.environ.get(name)
    if not value:
        missing(f"{name} is not set: run the tests through scripts/test.sh")
    return value


def zoo_data():
    """The zoo's data sets (scripts/zoo-data.sh): $ZOO_DATA, else .cache/zoo-data."""
    return pathlib.Path(os.environ.get("ZOO_DATA") or ROOT / ".cache" / "zoo-data")


def zoo_split(task, split):
    """The path of a task's split in the zoo data, or missing."""
    path = zoo_data() / task / f"{split}.npz"
    need(path.is_file(), f"{path} is missing: run scripts/zoo-data.sh (make setup)")
    return path


def calib_images(task, n, split="calib"):
    """A seeded random choice of n images (all, when the split has fewer) of
    a task's split, as float32 x / 255, [n,1,28,28]: the splits are stored
    in source order (mnist's grouped by digit), so not the first n."""
    import numpy as np

    with np.load(zoo_split(task, split)) as f:
        x = f["x"]
    x = x[np.sort(np.random.default_rng(0).choice(len(x), size=min(n, len(x)), replace=False))]
    return (x.astype(np.float32) / 255)[:, None, :, :]


@functools.cache
def manifest():
    """The zoo's manifest (tritonmodels/zoo/manifest.json), or missing."""
    path = ZOO / "manifest.json"
    need(path.is_file(), f"{path} is missing: the zoo is not built (make zoo)")
    return json.loads(path.read_text())


def need_models(addr, models):
    """Missing unless the Triton at addr (gRPC) serves every model ready."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    client = grpcclient.InferenceServerClient(url=addr)
    try:
        absent = [m for m in models if not client.is_model_ready(m)]
    except InferenceServerException as err:
        missing(f"cannot reach the Triton at {addr}: {err}")
    finally:
        client.close()
    need(not absent, f"the Triton at {addr} does not serve {absent}")


# Top-level directories that hold no source of the main module's binaries:
# the environments, the build output, the other module (docker/deploytest)
# and the Python side. Every other one is searched, so that a new package
# (livestats, problem, evaluate were once missed: a change there left a
# stale binary under test) counts without being listed.
_NOT_GO = {"bin", "docker", "docs", "tests", "tritonmodels", "node_modules"}


def _newest_go_source():
    newest = max((ROOT / "go.mod").stat().st_mtime, (ROOT / "go.sum").stat().st_mtime)
    for top in ROOT.iterdir():
        if not top.is_dir() or top.name.startswith(".") or top.name in _NOT_GO:
            continue
        for path in top.rglob("*.go"):
            if not path.name.endswith("_test.go"):
                newest = max(newest, path.stat().st_mtime)
    return newest


@functools.cache
def binary(name):
    """bin/<name> (calibrate, sidecar), built by make build (with OpenBLAS,
    and the react backend beside them) when missing or older than the Go
    sources, at most once a session: a stale binary would test old code.
    $SIDECAR_BIN or $CALIBRATE_BIN, when set, names another binary to test.
    A build that fails fails the test: it is the code under test."""
    override = os.environ.get(f"{name.upper()}_BIN")
    if override:
        return pathlib.Path(override).resolve()
    path = ROOT / "bin" / name
    if not path.is_file() or path.stat().st_mtime < _newest_go_source():
        _build()
    return path


@functools.cache
def _build():
    run = subprocess.run(["make", "-s", "build"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        pytest.fail(f"make build failed:\n{run.stderr[-2000:]}")


def deploytest_command(name, out_dir):
    """docker/deploytest's cmd/<name> (alerteval), built by go build into
    out_dir: that module's own, so that Prometheus' packages stay out of the
    main module. A build that fails fails the test."""
    out = out_dir / name
    run = subprocess.run(["go", "build", "-o", str(out), f"./cmd/{name}"], cwd=DEPLOYTEST, capture_output=True,
                         text=True, timeout=900)
    if run.returncode != 0:
        pytest.fail(f"go build ./cmd/{name} in docker/deploytest failed:\n{run.stderr[-2000:]}")
    return out
