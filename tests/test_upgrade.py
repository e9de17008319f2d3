"""calibrate upgrade end to end: a user's repository made controllable in
backend mode, rolled out into a live Triton, against numpy.

The test writes a model repository with conventions unlike the zoo's: an
ensemble cat_classifier whose input is a UINT8 "image", with a
pre-processing step (uint8 -> float in [0,1], "pixel_values"), a backbone
"vit" whose embedding is "embeddings" (ensemble tensor "emb"), a head whose
output is "OUTPUT__0", and a post-processing softmax giving the ensemble's
output "scores"; experts for two tasks. Every model is a small Python
model whose weights are in its configuration, so the test computes each
step in numpy from the same numbers.

It starts its own Triton (scripts/triton-up, with the react backend of
make build) in explicit and in poll model control mode, calibrates the
backbone with calibrate fit --triton, then runs calibrate upgrade
--rollout while a thread keeps asking the ensemble, and checks:
  - the ensemble stays ready and answers throughout the rollout (the
    server's strict readiness may drop while the react model loads; the
    count is printed);
  - with no preference, every output of the ensemble is byte-identical to
    its answer before the upgrade;
  - with a preference, the output is softmax(H W_p A (x / 255)) with W_p
    from calibrate solve;
  - the ensemble's metadata (names, datatypes, shapes, platform) is
    unchanged.

Needs the venv's Triton, go, and bin/backends/react/libtriton_react.so
(make build); skips without them, or fails when REACT_E2E=1.
"""

import json
import subprocess
import threading
import time
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from sidecar_helpers import Triton
from testenv import ROOT, VENV_PYTHON, need

BACKEND = ROOT / "bin" / "backends" / "react" / "libtriton_react.so"
TASKS = ["cats", "dogs"]
D, IN, CLASSES = 4, 3, 5

# The one model.py every step runs: the operation and its matrix come
# from the model's configuration parameters.
MODEL_PY = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        p = {k: v["string_value"] for k, v in cfg.get("parameters", {}).items()}
        self.op = p["op"]
        self.w = np.array(json.loads(p.get("matrix", "[]")), dtype=np.float64)
        self.inp = cfg["input"][0]["name"]
        self.out = cfg["output"][0]["name"]

    def execute(self, requests):
        responses = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, self.inp).as_numpy()
            if self.op == "scale":
                y = (x.astype(np.float32) / np.float32(255)).astype(np.float32)
            elif self.op == "linear":
                y = (x.astype(np.float64) @ self.w.T).astype(np.float32)
            else:
                e = np.exp(x - x.max(axis=1, keepdims=True))
                y = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(self.out, y)]))
        return responses
'''


def _matrix(seed, rows, cols):
    return np.random.default_rng(seed).normal(size=(rows, cols)).round(3)


A = _matrix(1, D, IN)  # the merged backbone
EXPERTS = {"cats": _matrix(2, D, IN), "dogs": _matrix(3, D, IN)}
H = _matrix(4, CLASSES, D)


def _model(repo, name, op, inp, out, matrix=None):
    d = repo / name
    (d / "1").mkdir(parents=True)
    (d / "1" / "model.py").write_text(MODEL_PY)
    (iname, itype, idims), (oname, otype, odims) = inp, out
    params = f'parameters {{ key: "op", value: {{ string_value: "{op}" }} }}\n'
    if matrix is not None:
        params += f'parameters {{ key: "matrix", value: {{ string_value: {json.dumps(json.dumps(matrix.tolist()))} }} }}\n'
    (d / "config.pbtxt").write_text(f'''name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "{iname}", data_type: {itype}, dims: [ {idims} ] }} ]
output [ {{ name: "{oname}", data_type: {otype}, dims: [ {odims} ] }} ]
instance_group [ {{ kind: KIND_CPU, count: 1 }} ]
{params}''')


ENSEMBLE = '''# The user's own ensemble: pre-processing, backbone, head, post-processing.
name: "cat_classifier"
platform: "ensemble"
max_batch_size: 8
input [ { name: "image", data_type: TYPE_UINT8, dims: [ 3 ] } ]
output [ { name: "scores", data_type: TYPE_FP32, dims: [ 5 ] } ]
ensemble_scheduling {
  step {
    model_name: "preprocess"
    model_version: -1
    input_map { key: "raw", value: "image" }
    output_map { key: "pixel_values", value: "pixels" }
  }
  step {
    model_name: "vit"
    model_version: -1
    input_map { key: "pixel_values", value: "pixels" }
    output_map { key: "embeddings", value: "emb" }
  }
  step {
    model_name: "head_a"
    model_version: -1
    input_map { key: "emb", value: "emb" }
    output_map { key: "OUTPUT__0", value: "logits" }
  }
  step {
    model_name: "softmax"
    model_version: -1
    input_map { key: "x", value: "logits" }
    output_map { key: "y", value: "scores" }
  }
}
'''


def _repository(repo):
    fp = ("pixel_values", "TYPE_FP32", str(IN))
    _model(repo, "preprocess", "scale", ("raw", "TYPE_UINT8", str(IN)), fp)
    _model(repo, "vit", "linear", fp, ("embeddings", "TYPE_FP32", str(D)), A)
    for task, w in EXPERTS.items():
        _model(repo, f"expert_{task}", "linear", fp, ("embeddings", "TYPE_FP32", str(D)), w)
    _model(repo, "head_a", "linear", ("emb", "TYPE_FP32", str(D)), ("OUTPUT__0", "TYPE_FP32", str(CLASSES)), H)
    _model(repo, "softmax", "softmax", ("x", "TYPE_FP32", str(CLASSES)), ("y", "TYPE_FP32", str(CLASSES)))
    (repo / "cat_classifier" / "1").mkdir(parents=True)
    (repo / "cat_classifier" / "config.pbtxt").write_text(ENSEMBLE)


def _triton(repo, mode, tmp):
    """A Triton of the venv serving repo in a model control mode, strict
    about readiness (a model that is loading is not ready)."""
    need(VENV_PYTHON.is_file(), "no .venv: run make setup")
    need(BACKEND.is_file(), f"{BACKEND} is missing: run make build")
    extra = ["--model-control-mode=" + mode, "--strict-readiness=true"]
    extra.append("--load-model=*" if mode == "explicit" else "--repository-poll-secs=1")
    return Triton(repo, tmp, extra).start()


def _infer(client, images, preference=None):
    inp = grpcclient.InferInput("image", list(images.shape), "UINT8")
    inp.set_data_from_numpy(images)
    params = {"react-preference": preference} if preference else None
    return client.infer("cat_classifier", [inp], parameters=params).as_numpy("scores")


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("mode", ["explicit", "poll"])
def test_upgrade_rolls_out_in_a_live_triton(calibrate, tmp_path, mode):
    repo = tmp_path / "models"
    _repository(repo)
    triton = _triton(repo, mode, tmp_path)
    try:
        client = grpcclient.InferenceServerClient(triton.grpc)
        rng = np.random.default_rng(7)
        images = rng.integers(0, 256, size=(6, IN), dtype=np.uint8)
        before = _infer(client, images)
        meta_before = client.get_model_metadata("cat_classifier", as_json=True)

        # Calibrate the backbone from Triton, on inputs as vit takes them.
        inputs = tmp_path / "inputs"
        inputs.mkdir()
        for task in TASKS:
            np.save(inputs / f"{task}.npy", (rng.integers(0, 256, size=(40, IN)) / 255).astype(np.float32))
        comps = tmp_path / "cats.safetensors"
        fit = subprocess.run([str(calibrate), "fit", "--triton", triton.grpc, "--inputs", str(inputs),
                              "--backbone-model", "vit", "--expert=cats=expert_cats", "--expert=dogs=expert_dogs",
                              "--out", str(comps)], capture_output=True, text=True, timeout=300)
        assert fit.returncode == 0, fit.stderr

        # The rollout, while a thread keeps asking the ensemble, and checks
        # its readiness and the server's.
        failures, flaps, answered, stop = [], [], [0], threading.Event()

        def watch():
            c = grpcclient.InferenceServerClient(triton.grpc)
            while not stop.is_set():
                try:
                    with urllib.request.urlopen(f"http://{triton.http}/v2/models/cat_classifier/ready", timeout=5) as r:
                        assert r.status == 200
                    _infer(c, images[:2])
                    answered[0] += 1
                except Exception as e:  # noqa: BLE001 (any failure counts)
                    failures.append(repr(e))
                try:
                    urllib.request.urlopen(f"http://{triton.http}/v2/health/ready", timeout=5).close()
                except Exception as e:  # noqa: BLE001
                    flaps.append(repr(e))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            up = subprocess.run([str(calibrate), "upgrade", "--repository", str(repo), "--model", "cat_classifier",
                                 "--correct", "emb", "--components", str(comps), "--rollout", triton.http,
                                 "--control", mode, "--wait", "90s"], capture_output=True, text=True, timeout=180)
            time.sleep(0.5)
        finally:
            stop.set()
            watcher.join()
        assert up.returncode == 0, f"upgrade failed:\n{up.stdout}\n{up.stderr}\n{triton.log.read_text()[-3000:]}"
        # The ensemble answered and stayed ready throughout. The server's
        # strict readiness may drop while the new react model loads (it is
        # not ready until loaded): docs/upgrade.md says what probes to use.
        assert answered[0] > 0 and failures == [], f"the ensemble failed during the rollout: {failures[:5]}"
        print(f"{mode}: {answered[0]} answers during the rollout; the server's strict readiness dropped {len(flaps)} times")

        # No preference: byte for byte as before; the signature unchanged.
        after = _infer(client, images)
        assert after.tobytes() == before.tobytes()
        assert client.get_model_metadata("cat_classifier", as_json=True) == meta_before

        # A preference: softmax(H W_p A x) with W_p from calibrate solve.
        pref = "cats=0.7,dogs=0.3"
        w_path = tmp_path / "W.npy"
        solve = subprocess.run([str(calibrate), "solve", "--components", str(comps), "--preference", pref,
                                "--out", str(w_path)], capture_output=True, text=True, timeout=120)
        assert solve.returncode == 0, solve.stderr
        W = np.load(w_path).astype(np.float64)
        x = images.astype(np.float32) / np.float32(255)
        emb = (x.astype(np.float64) @ A.T).astype(np.float32).astype(np.float64)
        want = _softmax((emb @ W.T) @ H.T)
        got = _infer(client, images, pref)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        assert np.abs(got - before).max() > 1e-3, "the preference changed nothing"
    finally:
        triton.down()
