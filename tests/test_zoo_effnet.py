"""The second zoo (tritonmodels/zoo-effnet, EfficientNet-Lite0, D=1280).

Without Triton: the committed ONNX files match the manifest's sha256,
tritonmodels/repo-effnet is what make_repo.py --zoo effnet generates, and
the README table and results.json are what evaluate.py computes from the
ONNX files on the whole test splits (about two minutes).

On a Triton of its own serving tritonmodels/repo-effnet, with the sidecar
(tritonmodels/zoo-effnet/sidecar.yaml) in front of it:

- the repository loads, every model of it;
- on a seeded random slice of every task's test split (never a prefix), the
  plain ensembles (AdaMerging -> head) and the experts answer exactly what
  onnxruntime computes here from the committed ONNX files, and their
  accuracy is within a binomial margin of the recorded table
  (tritonmodels/zoo-effnet/results.json, whole test splits);
- W_p at D=1280, through the react backend's ensembles and through the
  sidecar, equals head(W_p · backbone(x)) computed here in float64 with
  W_p from `calibrate solve`, and the one-hot corrected accuracy on the
  slice is within a binomial margin of the report's
  (tritonmodels/zoo-effnet/eval.json, written by make report).

The components file (236 MB at D=1280) is not committed: when
tritonmodels/zoo-effnet/components.safetensors is missing, the fixture
builds it with scripts/zoo-components.sh --zoo effnet (about a minute).
"""
import hashlib
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient

import make_repo  # tritonmodels/make_repo.py
from sidecar_helpers import Sidecar, Triton, assert_close, grpc_infer
from testenv import ROOT, binary, zoo_split

ZOO = ROOT / "tritonmodels" / "zoo-effnet"
REPO = ROOT / "tritonmodels" / "repo-effnet"
COMPONENTS = ZOO / "components.safetensors"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())
TASKS = list(MANIFEST["tasks"])
D = MANIFEST["D"]
SLICE = 150  # test images per task, a seeded random choice
SEED = 20261124


def test_onnx_files_match_manifest():
    bad = [name for name, entry in MANIFEST["files"].items()
           if hashlib.sha256((ZOO / entry["path"]).read_bytes()).hexdigest() != entry["sha256"]]
    assert not bad, f"sha256 differs from tritonmodels/zoo-effnet/manifest.json: {bad}"
    listed = {pathlib.PurePath(e["path"]).name for e in MANIFEST["files"].values()}
    assert {p.name for p in (ZOO / "onnx").glob("*.onnx")} == listed


def test_repo_is_generated():
    lines = make_repo.differences("effnet")
    assert not lines, "tritonmodels/repo-effnet/ is stale; run make_repo.py --zoo effnet:\n" + "\n".join(lines)


def test_accuracy_table_is_current():
    run = subprocess.run([sys.executable, str(ROOT / "tritonmodels" / "zoo" / "evaluate.py"), "--check"],
                         capture_output=True, text=True, timeout=900, env={**os.environ, "ZOO_NAME": "effnet"})
    assert run.returncode == 0, run.stdout + run.stderr


def _binomial_margin(p, n):
    """How far a slice's accuracy may be from the whole split's: four
    standard errors of a binomial proportion, plus one sample."""
    return 4 * math.sqrt(max(p * (1 - p), 0.01) / n) + 1 / n


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("effnet")
    if not COMPONENTS.exists():
        run = subprocess.run([str(ROOT / "scripts" / "zoo-components.sh"), "--zoo", "effnet"], cwd=ROOT,
                             capture_output=True, text=True, timeout=1200)
        assert run.returncode == 0, f"zoo-components.sh --zoo effnet failed:\n{run.stdout}\n{run.stderr}"
    server = Triton(REPO, root).start(timeout=600)
    # The shipped configuration, with the addresses from the environment.
    side = Sidecar(ZOO / "sidecar.yaml", root, env={
        "REACT_TRITON_GRPC": server.grpc, "REACT_TRITON_HTTP": server.http,
        "REACT_LISTEN_GRPC": "127.0.0.1:0", "REACT_LISTEN_HTTP": "127.0.0.1:0",
        "REACT_LISTEN_METRICS": "127.0.0.1:0"}).start(timeout=180)
    clients = {"triton": grpcclient.InferenceServerClient(server.grpc),
               "sidecar": grpcclient.InferenceServerClient(side.grpc)}
    yield clients
    for c in clients.values():
        c.close()
    side.stop()
    server.down()


def _session(name):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(ZOO / MANIFEST["files"][name]["path"]), opts, providers=["CPUExecutionProvider"])


def _slice(task):
    """The slice: SLICE seeded random test images ([N,1,28,28] in [0,1]) and
    their labels."""
    with np.load(zoo_split(task, "test")) as f:
        x, y = f["x"], f["y"]
    rows = np.sort(np.random.default_rng(SEED + TASKS.index(task)).choice(len(y), size=SLICE, replace=False))
    return np.ascontiguousarray(x[rows, None].astype(np.float32) / 255), y[rows]


def _logits(client, model, x, **kwargs):
    return grpc_infer(client, model, {"image": x}, ["logits"], **kwargs).as_numpy("logits")


def test_every_model_is_ready(served):
    index = served["triton"].get_model_repository_index(as_json=True)["models"]
    states = {m["name"]: m.get("state") for m in index}
    assert states and all(s == "READY" for s in states.values()), states
    for name in MANIFEST["files"]:
        assert states.get(name) == "READY", name
    for task in TASKS:
        assert states.get(task) == "READY" and states.get(f"{task}_react") == "READY", task


@pytest.mark.parametrize("task", TASKS)
def test_slice_matches_onnxruntime_and_the_recorded_table(served, task):
    results = json.loads((ZOO / "results.json").read_text())["accuracy"]
    x, y = _slice(task)
    head = _session(f"head_{task}")
    for row, triton_model, backbone in [("AdaMerging", task, "backbone_adamerging"),
                                        ("Individual", None, f"expert_{task}")]:
        z = _session(backbone).run(None, {"image": x})[0]
        want = head.run(None, {"feature": z})[0]
        if triton_model is None:  # the expert and its head, called one after the other
            feature = grpc_infer(served["triton"], backbone, {"image": x}, ["feature"]).as_numpy("feature")
            got = grpc_infer(served["triton"], f"head_{task}", {"feature": feature}, ["logits"]).as_numpy("logits")
        else:
            got = _logits(served["triton"], triton_model, x)
        assert_close(got, want, rel=1e-4, what=f"{row} {task}")
        acc = float((got.argmax(1) == y).mean())
        recorded = results[row][task]
        assert abs(acc - recorded) <= _binomial_margin(recorded, SLICE), \
            f"{row} {task}: slice accuracy {acc:.3f}, recorded {recorded:.3f} on the whole split"


def _solve(preference, tmp_path):
    out = tmp_path / "W.npy"
    run = subprocess.run([str(binary("calibrate")), "solve", "--components", str(COMPONENTS),
                          "--preference", preference, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    w = np.load(out)
    assert w.shape == (D, D) and w.dtype == np.float32
    return w.astype(np.float64)


@pytest.mark.parametrize("task", ["fashion", "greek"])
def test_wp_at_1280_through_backend_and_sidecar(served, task, tmp_path):
    x, y = _slice(task)
    preference = f"{task}=1"
    w = _solve(preference, tmp_path)
    z = grpc_infer(served["triton"], "backbone_adamerging", {"image": x}, ["feature"]).as_numpy("feature")
    corrected = (z.astype(np.float64) @ w.T).astype(np.float32)
    want = grpc_infer(served["triton"], f"head_{task}", {"feature": corrected}, ["logits"]).as_numpy("logits")
    backend = _logits(served["triton"], f"{task}_react", x, parameters={"react-preference": preference})
    sidecar = _logits(served["sidecar"], task, x, headers={"react-preference": preference})
    assert_close(backend, want, rel=1e-4, what=f"backend {task}")
    assert_close(sidecar, want, rel=1e-4, what=f"sidecar {task}")
    plain = _logits(served["triton"], task, x)
    assert np.abs(backend - plain).max() > 1e-2, "the preference changed nothing"

    report = ZOO / "eval.json"
    if report.exists():  # the report's one-hot row for AdaMerging (make report writes it)
        rec = json.loads(report.read_text())
        row = next(r for r in rec["rows"] if r.get("backbone") == "AdaMerging" and r["method"] == "react"
                   and r["label"] == preference and r.get("set") == "one-hot")
        recorded = row["accuracy"][rec["tasks"].index(task)]
        acc = float((backend.argmax(1) == y).mean())
        assert abs(acc - recorded) <= _binomial_margin(recorded, SLICE), \
            f"ReACT one-hot {task}: slice accuracy {acc:.3f}, recorded {recorded:.3f}"
