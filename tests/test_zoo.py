"""The demo model zoo (tritonmodels/) as the real Triton serves it.

Without Triton:
- the committed ONNX files match the sha256 sums in tritonmodels/zoo/manifest.json;
- tritonmodels/repo/ is exactly what tritonmodels/make_repo.py generates;
- every config.pbtxt, served and template, parses as Triton's ModelConfig.

With the Triton of scripts/test.sh, which serves tritonmodels/repo beside
triton/testdata/repo and exports ZOO_MODEL_REPOSITORY, and with the zoo data
of scripts/setup.d/30-zoo-data.sh (.cache/zoo-data, or ZOO_DATA), queried with
the official tritonclient over gRPC and HTTP:
- every model of the zoo repository is ready;
- each task's ensemble agrees with onnxruntime run here on N_TEST fixed test
  images, and its accuracy is within 3 sigma of the table's;
- every backbone's `feature` and every head's `logits` match onnxruntime;
- concurrent requests are batched by the dynamic batcher and answered right;
- the preprocessing model turns 8-bit grey PNGs into exactly the zoo's
  tensors (x / 255), preprocess_<backbone> answers the backbone's feature of
  them, and a file that does not decode fails its own request alone
  (INVALID_ARGUMENT, naming the image), not the others sent with it;
- the readiness and ensemble accuracy tests run again through the sidecar that
  scripts/test.sh puts in front of Triton (SIDECAR_GRPC_ADDR, SIDECAR_HTTP_ADDR).
When Triton or the data are missing these tests skip, or fail with REACT_E2E=1.
"""

import functools
import hashlib
import io
import json
import os
import pathlib
import queue
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import text_format
from PIL import Image
from tritonclient.grpc import model_config_pb2

import make_repo  # tritonmodels/make_repo.py
from testenv import ROOT, ZOO, missing, zoo_split
from testenv import ZOO_REPO as REPO

TEMPLATES = ROOT / "tritonmodels" / "templates"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())
RESULTS = json.loads((ZOO / "results.json").read_text())
TASKS = list(MANIFEST["tasks"])
BACKBONES = [name for name, entry in MANIFEST["files"].items() if entry["kind"] == "backbone"]
HEADS = [f"head_{task}" for task in TASKS]
ZOO_MODELS = BACKBONES + HEADS + TASKS
IMAGE = MANIFEST["backbone"]["input"]["name"]
FEATURE = MANIFEST["backbone"]["output"]["name"]
LOGITS = MANIFEST["head"]["output"]
# N_TEST test images per task: a seeded random sample, not the first N_TEST,
# because some splits are sorted by class (mnist's test split starts with 0s and 1s).
N_TEST = 300
PROTOCOLS = ["grpc", "http"]
# The servers a test can talk to, with the variables holding their addresses:
# Triton itself (the default), or the sidecar in front of it.
TARGETS = {"triton": ("TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR"), "sidecar": ("SIDECAR_GRPC_ADDR", "SIDECAR_HTTP_ADDR")}
# results.json's row for each backbone a deployment can use.
RESULTS_ROW = {"backbone_base": "Base", "backbone_ta": "TA", "backbone_ties": "TIES", "backbone_adamerging": "AdaMerging"}

DEPLOYED = f"backbone_{make_repo.DEPLOYMENT_BACKBONE}"
ZOO_MODELS.append(make_repo.FP16_BACKBONE)
# Backend mode: the react models, each task's <task>_react ensemble, and the
# FP16 head and ensemble of FP16_TASK.
REACT_MODELS = [make_repo.REACT_MODEL, make_repo.REACT_MODEL_FP16]
REACT_ENSEMBLES = [f"{t}_react" for t in TASKS] + [f"{make_repo.FP16_TASK}_fp16_react"]
FP16_HEAD = f"head_{make_repo.FP16_TASK}_fp16"
ZOO_MODELS += REACT_MODELS + REACT_ENSEMBLES + [FP16_HEAD]
# Encoded images: the preprocessing model and, for every backbone (experts
# included), the ensemble preprocess_<backbone> in front of it.
PREPROCESS_ENSEMBLES = [f"{make_repo.PREPROCESS}_{b}" for b in BACKBONES]
ZOO_MODELS += [make_repo.PREPROCESS] + PREPROCESS_ENSEMBLES


def _module(protocol):
    return grpcclient if protocol == "grpc" else httpclient


@pytest.fixture(scope="module")
def clients(request):
    """Clients of Triton, or of the sidecar with indirect parametrisation
    ("triton" or "sidecar", a key of TARGETS)."""
    grpc_var, http_var = TARGETS[getattr(request, "param", "triton")]
    names = (grpc_var, http_var, "ZOO_MODEL_REPOSITORY")
    env = {name: os.environ.get(name) for name in names}
    unset = [name for name, value in env.items() if not value]
    if unset:
        missing(f"{', '.join(unset)} not set: run the tests through scripts/test.sh")
    if pathlib.Path(env["ZOO_MODEL_REPOSITORY"]).resolve() != REPO:
        missing(f"ZOO_MODEL_REPOSITORY={env['ZOO_MODEL_REPOSITORY']} is not this checkout's {REPO}")
    grpc = grpcclient.InferenceServerClient(url=env[grpc_var])
    http = httpclient.InferenceServerClient(url=env[http_var])
    yield {"grpc": grpc, "http": http}
    grpc.close()
    http.close()


@functools.cache
def _split(task, split="test", n=N_TEST):
    """n images of a split, always the same ones (seed 0, in file order), as
    float32 [n,1,28,28] in [0,1], and their labels."""
    with np.load(zoo_split(task, split)) as f:
        rows = np.sort(np.random.default_rng(0).choice(len(f["x"]), size=min(n, len(f["x"])), replace=False))
        x = f["x"][rows].astype(np.float32)[:, None] / 255
        y = f["y"][rows] if "y" in f else None
    return x, y


@functools.cache
def _mixed_images(per_task=32):
    return np.concatenate([_split(task)[0][:per_task] for task in TASKS])


@functools.cache
def _session(name):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    path = ZOO / MANIFEST["files"][name]["path"]
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _direct(name, x):
    session = _session(name)
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _served(client, protocol, model, input_name, output_name, x, batch=100):
    """The model's output for x, sent in requests of `batch` rows."""
    module = _module(protocol)
    parts = []
    for i in range(0, len(x), batch):
        chunk = np.ascontiguousarray(x[i:i + batch])
        inp = module.InferInput(input_name, list(chunk.shape), "FP32")
        inp.set_data_from_numpy(chunk)
        result = client.infer(model, [inp], outputs=[module.InferRequestedOutput(output_name)])
        parts.append(result.as_numpy(output_name))
    return np.concatenate(parts)


def _parse(path):
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


# ---------------------------------------------------------------- without Triton


def test_onnx_files_match_manifest():
    bad = []
    for name, entry in MANIFEST["files"].items():
        data = (ZOO / entry["path"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"] or len(data) != entry["bytes"]:
            bad.append(name)
    assert not bad, f"sha256 or size differs from manifest.json: {bad}"
    listed = {pathlib.PurePath(entry["path"]).name for entry in MANIFEST["files"].values()}
    on_disk = {p.name for p in (ZOO / "onnx").glob("*.onnx")}
    assert on_disk == listed, f"ONNX files not in the manifest: {sorted(on_disk - listed)}"


def test_accuracy_table_is_current():
    """The README table and results.json are what evaluate.py computes from
    the committed ONNX files on the regenerated test splits (not typed in)."""
    zoo_split("fashion", "test")
    run = subprocess.run([sys.executable, str(ZOO / "evaluate.py"), "--check"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_repo_is_generated():
    lines = make_repo.differences()
    assert not lines, "tritonmodels/repo/ is stale; run .venv/bin/python tritonmodels/make_repo.py:\n" + "\n".join(lines)


def test_repo_configs():
    models = sorted(p.parent.name for p in REPO.glob("*/config.pbtxt"))
    assert models == sorted(ZOO_MODELS)
    for name in BACKBONES + HEADS + [FP16_HEAD]:
        config = _parse(REPO / name / "config.pbtxt")
        assert config.name == name and config.backend == "python"
        assert config.max_batch_size > 0 and config.HasField("dynamic_batching")
        assert [(g.kind, g.count) for g in config.instance_group] == [(model_config_pb2.ModelInstanceGroup.KIND_CPU, 1)]
        assert config.parameters["intra_op_num_threads"].string_value == "1"
        onnx = (REPO / config.parameters["onnx_file"].string_value).resolve()
        assert onnx == (ZOO / MANIFEST["files"][name.removesuffix("_fp16")]["path"]).resolve()
    fp16 = _parse(REPO / make_repo.FP16_BACKBONE / "config.pbtxt")
    deployed = _parse(REPO / DEPLOYED / "config.pbtxt")
    assert fp16.parameters["onnx_file"] == deployed.parameters["onnx_file"]
    assert [o.data_type for o in fp16.output] == [model_config_pb2.TYPE_FP16]
    for task in TASKS:
        config = _parse(REPO / task / "config.pbtxt")
        assert config.platform == "ensemble" and config.max_batch_size > 0
        steps = [s.model_name for s in config.ensemble_scheduling.step]
        assert steps == [DEPLOYED, f"head_{task}"]
        assert list(config.output[0].dims) == [MANIFEST["tasks"][task]["num_classes"]]
    # Backend mode: the plain ensemble plus one react step, whose corrected
    # feature the head takes; the react model reads the zoo's components file.
    for name in REACT_MODELS:
        config = _parse(REPO / name / "config.pbtxt")
        assert config.backend == "react" and config.max_batch_size > 0 and config.HasField("dynamic_batching")
        path = (REPO / name / "1" / config.parameters["components"].string_value).resolve()
        assert path == (ZOO / "components.safetensors").resolve(), name
        assert [t.name for t in config.input] == [FEATURE] and [t.name for t in config.output] == [make_repo.CORRECTED]
    for name in REACT_ENSEMBLES:
        task = name.split("_")[0]
        config = _parse(REPO / name / "config.pbtxt")
        fp16 = name.endswith("_fp16_react")
        steps = [(s.model_name, dict(s.input_map)) for s in config.ensemble_scheduling.step]
        assert steps == [(make_repo.FP16_BACKBONE if fp16 else DEPLOYED, {IMAGE: IMAGE}),
                         (make_repo.REACT_MODEL_FP16 if fp16 else make_repo.REACT_MODEL, {FEATURE: FEATURE}),
                         (FP16_HEAD if fp16 else f"head_{task}", {FEATURE: make_repo.CORRECTED})], name
    # Encoded images: BYTES [1] in, the backbones' image out; each ensemble
    # runs the preprocessing model, then its backbone.
    config = _parse(REPO / make_repo.PREPROCESS / "config.pbtxt")
    assert config.backend == "python" and config.max_batch_size > 0 and config.HasField("dynamic_batching")
    assert [(t.name, t.data_type, list(t.dims)) for t in config.input] == [(make_repo.ENCODED, model_config_pb2.TYPE_STRING, [1])]
    assert [(t.name, t.data_type, list(t.dims)) for t in config.output] == [
        (IMAGE, model_config_pb2.TYPE_FP32, MANIFEST["backbone"]["input"]["shape"][1:])]
    for backbone in BACKBONES:
        name = f"{make_repo.PREPROCESS}_{backbone}"
        config = _parse(REPO / name / "config.pbtxt")
        assert config.platform == "ensemble" and config.max_batch_size > 0, name
        assert [t.name for t in config.input] == [make_repo.ENCODED] and [t.name for t in config.output] == [FEATURE], name
        steps = [(s.model_name, dict(s.input_map), dict(s.output_map)) for s in config.ensemble_scheduling.step]
        assert steps == [(make_repo.PREPROCESS, {make_repo.ENCODED: make_repo.ENCODED}, {IMAGE: IMAGE}),
                         (backbone, {IMAGE: IMAGE}, {FEATURE: FEATURE})], name


def test_templates():
    """The production templates are not loaded here (no GPU, and the bundled
    Triton has only the Python backend): they are parsed as Triton 2.51's
    ModelConfig and checked against the manifest and the layout the sidecar
    relies on."""
    group = model_config_pb2.ModelInstanceGroup
    image_dims = MANIFEST["backbone"]["input"]["shape"][1:]
    flavours = sorted(p.name for p in TEMPLATES.iterdir() if p.is_dir())
    assert flavours == ["onnxruntime", "tensorrt"]
    for flavour in flavours:
        configs = {p.parent.name: _parse(p) for p in (TEMPLATES / flavour).glob("*/config.pbtxt")}
        ensembles = [c for c in configs.values() if c.platform == "ensemble"]
        assert ensembles, flavour
        for name, config in configs.items():
            where = f"{flavour}/{name}"
            assert config.name == name, where
            assert config.max_batch_size > 0, where
            if config.platform == "ensemble":
                continue
            if config.backend == "react":
                # Backend mode's step: the zoo's react model with a components
                # file in its version directory, on the CPU (the CPU build).
                assert config.parameters["components"].string_value == "components.safetensors", where
                assert [(t.name, list(t.dims)) for t in config.input] == [(FEATURE, [MANIFEST["D"]])], where
                assert [(t.name, list(t.dims)) for t in config.output] == [(make_repo.CORRECTED, [MANIFEST["D"]])], where
                assert all(g.kind == group.KIND_CPU for g in config.instance_group), where
                continue
            if flavour == "tensorrt":
                assert config.platform == "tensorrt_plan", where
            else:
                assert config.backend == "onnxruntime", where
            assert config.instance_group and all(g.kind == group.KIND_GPU for g in config.instance_group), where
            batching = config.dynamic_batching
            assert batching.preferred_batch_size and batching.max_queue_delay_microseconds > 0, where
            assert max(batching.preferred_batch_size) <= config.max_batch_size, where
        for ensemble in ensembles:
            where = f"{flavour}/{ensemble.name}"
            assert (TEMPLATES / flavour / ensemble.name / "1").is_dir(), f"{where}: an ensemble needs its version directory"
            steps = list(ensemble.ensemble_scheduling.step)
            if ensemble.name.endswith("_react"):
                # Backend mode: the plain ensemble plus the react step.
                task = ensemble.name.removesuffix("_react")
                backbone_step, react_step, head_step = steps
                assert configs[react_step.model_name].backend == "react", where
                assert dict(react_step.input_map) == {FEATURE: FEATURE}, where
                assert dict(head_step.input_map) == {FEATURE: make_repo.CORRECTED}, where
                plain = configs[task].ensemble_scheduling.step
                assert [s.model_name for s in plain] == [backbone_step.model_name, head_step.model_name], where
                assert plain[0].model_version == backbone_step.model_version, where
                continue
            task = ensemble.name
            backbone_step, head_step = steps
            backbone, head = configs[backbone_step.model_name], configs[head_step.model_name]
            assert head.name == f"head_{task}", where
            # The feature is the backbone model's own output, served on its own,
            # at the version the components file was calibrated on.
            assert [(t.name, list(t.dims)) for t in backbone.input] == [(IMAGE, image_dims)], where
            assert [(t.name, list(t.dims)) for t in backbone.output] == [(FEATURE, [MANIFEST["D"]])], where
            assert dict(backbone_step.output_map) == {FEATURE: FEATURE}, where
            assert backbone_step.model_version > 0, f"{where}: pin the backbone's version"
            assert list(backbone.version_policy.specific.versions) == [backbone_step.model_version], where
            assert dict(head_step.input_map) == {FEATURE: FEATURE}, where
            classes = [MANIFEST["tasks"][task]["num_classes"]]
            assert [(t.name, list(t.dims)) for t in head.output] == [(LOGITS, classes)], where
            assert [(t.name, list(t.dims)) for t in ensemble.output] == [(LOGITS, classes)], where


# ---------------------------------------------------------------- with Triton


@pytest.mark.parametrize("clients", list(TARGETS), indirect=True)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_zoo_models_ready(clients, protocol):
    client = clients[protocol]
    assert client.is_server_ready()
    not_ready = [m for m in ZOO_MODELS if not client.is_model_ready(m)]
    assert not not_ready, f"not ready: {not_ready}"
    kwargs = {"as_json": True} if protocol == "grpc" else {}
    for task in TASKS:
        config = client.get_model_config(task, **kwargs)
        config = config.get("config", config)
        if config.get("backend") == "react":
            # The sidecar shadows each ensemble with a controllable model
            # (tritonmodels/zoo/sidecar.yaml) that runs the same two models.
            params = {k: v["string_value"] for k, v in config["parameters"].items()}
            assert params["react.backbone"] == f"{DEPLOYED}:{FEATURE}", task
            assert params["react.heads"] == f"{task}=head_{task}", task
            continue
        steps = [s["model_name"] for s in config["ensemble_scheduling"]["step"]]
        assert steps == [DEPLOYED, f"head_{task}"], task


@pytest.mark.parametrize("clients", list(TARGETS), indirect=True)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("task", TASKS)
def test_ensemble_accuracy(clients, protocol, task):
    x, y = _split(task)
    logits = _served(clients[protocol], protocol, task, IMAGE, LOGITS, x)
    direct = _direct(f"head_{task}", _direct(DEPLOYED, x))
    served_pred, direct_pred = logits.argmax(1), direct.argmax(1)
    agreement = float((served_pred == direct_pred).mean())
    accuracy = float((served_pred == y).mean())
    table = RESULTS["accuracy"][RESULTS_ROW[DEPLOYED]][task]
    sigma = np.sqrt(table * (1 - table) / len(y))
    print(f"{task} ({protocol}): accuracy {accuracy:.3f} on {len(y)} images, table {table:.3f} "
          f"(3 sigma {3 * sigma:.3f}), agreement {agreement:.4f}, max |dlogits| {np.abs(logits - direct).max():.2e}")
    assert agreement >= 0.995
    assert abs(accuracy - table) <= 3 * sigma


@pytest.mark.parametrize("model", BACKBONES)
def test_backbone_feature_matches_onnxruntime(clients, model):
    x = _mixed_images()
    direct = _direct(model, x)
    for protocol in PROTOCOLS:
        served = _served(clients[protocol], protocol, model, IMAGE, FEATURE, x, batch=64)
        assert served.shape == direct.shape == (len(x), MANIFEST["D"])
        diff = float(np.abs(served - direct).max())
        assert diff <= 1e-4, f"{model} ({protocol}): max abs diff {diff:.2e}"


def test_fp16_backbone_is_the_deployed_one_in_fp16(clients):
    """The FP16 backbone answers the deployed backbone's feature rounded to
    float16, the input of the sidecar's half-precision tests."""
    x = _mixed_images()[:32]
    full = _served(clients["grpc"], "grpc", DEPLOYED, IMAGE, FEATURE, x)
    half = _served(clients["grpc"], "grpc", make_repo.FP16_BACKBONE, IMAGE, FEATURE, x)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, full.astype(np.float16))


@pytest.mark.parametrize("task", TASKS)
def test_head_logits_match_onnxruntime(clients, task):
    feature = _direct(DEPLOYED, _mixed_images())
    direct = _direct(f"head_{task}", feature)
    served = _served(clients["http"], "http", f"head_{task}", FEATURE, LOGITS, feature)
    assert served.shape == direct.shape
    assert float(np.abs(served - direct).max()) <= 1e-4


def test_concurrent_requests_are_batched(clients):
    """Single-image requests sent at once share executions (the dynamic
    batcher), and each still gets its own answer.

    Whether requests overlap depends on timing: on a starved CPU the client
    can send them one by one, each executed alone. So up to three rounds are
    sent, every answer is checked, and at least one round must have shared
    executions; with the dynamic batcher off, every round would fail."""
    model, n = "backbone_base", 48
    client = clients["grpc"]
    x = _mixed_images()[:n]
    want = _direct(model, x)

    def counts():
        stats = client.get_inference_statistics(model, as_json=True)["model_stats"][0]
        return int(stats.get("inference_count", 0)), int(stats.get("execution_count", 0))

    rounds = []
    for _ in range(3):
        before = counts()
        answers = queue.Queue()
        for i in range(n):
            inp = grpcclient.InferInput(IMAGE, [1, 1, 28, 28], "FP32")
            inp.set_data_from_numpy(x[i:i + 1])
            client.async_infer(model, [inp], functools.partial(lambda i, result, error: answers.put((i, result, error)), i),
                               outputs=[grpcclient.InferRequestedOutput(FEATURE)])
        served = np.zeros((n, MANIFEST["D"]), np.float32)
        for _ in range(n):
            i, result, error = answers.get(timeout=60)
            assert error is None, error
            served[i] = result.as_numpy(FEATURE)[0]
        assert float(np.abs(served - want).max()) <= 1e-4
        # Triton updates its statistics after it sends a response, so the
        # counters can trail the answers for a moment: wait (bounded) for them.
        for _ in range(100):
            inferences, executions = (a - b for a, b in zip(counts(), before))
            if inferences >= n:
                break
            time.sleep(0.05)
        print(f"{model}: {inferences} requests in {executions} executions")
        assert inferences == n
        rounds.append(executions)
        if executions < n:
            break
    assert min(rounds) < n, f"no round shared executions: {rounds} executions for {n} requests each"


def _encoded(x, fmt="PNG"):
    """Images x, float32 [N,1,H,W] of v/255, encoded one by one with Pillow."""
    out = []
    for img in np.rint(x[:, 0] * 255).astype(np.uint8):
        b = io.BytesIO()
        Image.fromarray(img).save(b, fmt)
        out.append(b.getvalue())
    return out


def _bytes_input(module, items):
    x = np.array(items, dtype=object).reshape(-1, 1)
    inp = module.InferInput(make_repo.ENCODED, list(x.shape), "BYTES")
    inp.set_data_from_numpy(x)
    return inp


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_preprocess_decodes_like_the_npy_images(clients, protocol):
    """The preprocessing model turns 8-bit grey PNGs into exactly x / 255 in
    float32, the zoo's tensors; a JPEG of them comes close (it is lossy);
    preprocess_<backbone> answers the backbone's feature of those tensors."""
    client, module = clients[protocol], _module(protocol)
    x = _mixed_images()[:64]
    result = client.infer(make_repo.PREPROCESS, [_bytes_input(module, _encoded(x))],
                          outputs=[module.InferRequestedOutput(IMAGE)])
    np.testing.assert_array_equal(result.as_numpy(IMAGE), x)
    result = client.infer(make_repo.PREPROCESS, [_bytes_input(module, _encoded(x, "JPEG"))],
                          outputs=[module.InferRequestedOutput(IMAGE)])
    assert result.as_numpy(IMAGE).shape == x.shape
    assert float(np.abs(result.as_numpy(IMAGE) - x).mean()) < 0.05
    for backbone in (DEPLOYED, "backbone_ta", f"expert_{TASKS[0]}"):
        result = client.infer(f"{make_repo.PREPROCESS}_{backbone}", [_bytes_input(module, _encoded(x))],
                              outputs=[module.InferRequestedOutput(FEATURE)])
        diff = float(np.abs(result.as_numpy(FEATURE) - _direct(backbone, x)).max())
        assert diff <= 1e-4, f"{make_repo.PREPROCESS}_{backbone} ({protocol}): max abs diff {diff:.2e}"


def test_preprocess_bad_image_fails_its_request_alone(clients):
    """A request holding a file that does not decode fails with
    INVALID_ARGUMENT, through the ensemble too, saying which image and why;
    the requests sent at the same time (batched with it or not) are answered."""
    client = clients["grpc"]
    x = _mixed_images()[:8]
    good = _encoded(x)
    bad = {2: [good[0], good[1][:60]], 5: [b"not an image"]}  # a truncated PNG; no image at all
    answers = queue.Queue()
    for i in range(8):
        items = bad.get(i, good[i:i + 1])
        client.async_infer(f"{make_repo.PREPROCESS}_{DEPLOYED}", [_bytes_input(grpcclient, items)],
                           functools.partial(lambda i, result, error: answers.put((i, result, error)), i),
                           outputs=[grpcclient.InferRequestedOutput(FEATURE)])
    want = _direct(DEPLOYED, x)
    for _ in range(8):
        i, result, error = answers.get(timeout=60)
        if i == 2:
            assert error is not None and error.status() == "StatusCode.INVALID_ARGUMENT", error
            assert "image 1 of 2: cannot decode: image file is truncated" in error.message(), error.message()
        elif i == 5:
            assert error is not None and error.status() == "StatusCode.INVALID_ARGUMENT", error
            assert "image 0 of 1: cannot decode: not an image" in error.message(), error.message()
        else:
            assert error is None, (i, error)
            assert float(np.abs(result.as_numpy(FEATURE)[0] - want[i]).max()) <= 1e-4
