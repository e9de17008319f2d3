"""A/B experiments (docs/sidecar.md, "Experiments"), end to end.

- The published vectors (experiment/testdata/vectors.tsv) are reproduced by
  the Python function the documentation shows, which is
  experiment/assign.py verbatim; that function is checked against published
  murmur3 vectors, and `bin/calibrate experiment assign` against it.
- Through the sidecar of scripts/test.sh (the zoo's configuration, whose
  experiment fashion-ab splits fashion_ab between the merged backbone and
  W_p for fashion=1), with the official tritonclient: each key gets the arm
  the Python function gives it, echoed in react-arm, with that arm's
  canonical preference and logits (checked against the backbone and head
  called on Triton and W_p from calibrate solve, in float64); the per-arm
  metrics count the requests, keyless requests, overrides and each row's
  top-1 confidence.
- Two sidecar processes in front of the same Triton give every key the
  same arm.
- A reload that changes the weights while requests run: none fails, and
  the metrics show the new split.
"""

import collections
import json
import pathlib
import subprocess
import threading
import types

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import _utils as grpc_utils

from assign import assign, murmur3_32  # experiment/assign.py
from sidecar_helpers import (IMAGE, LOGITS, Sidecar, assert_close, atomic_write, config_text, images, metric,
                             reference_logits, scrape, sidecar_config, wait_for)
from testenv import ROOT, binary, env

ASSIGN_PY = ROOT / "experiment" / "assign.py"
VECTORS = ROOT / "experiment" / "testdata" / "vectors.tsv"
EXPERIMENT = "fashion-ab"
ARMS = [("merged", 50), ("react", 50)]
# What each arm applies, written out here: the reference's preference and
# the canonical form the sidecar must echo.
ARM_PREFERENCE = {"merged": None, "react": "fashion=1"}
ARM_CANONICAL = {"merged": "none", "react": "fashion=1"}


# ---------------------------------------------------------------- the assignment, offline


def test_docs_show_assign_py_verbatim():
    docs = (ROOT / "docs" / "sidecar.md").read_text()
    assert "```python\n" + ASSIGN_PY.read_text() + "```\n" in docs, \
        "docs/sidecar.md must show experiment/assign.py verbatim in a python block"


def test_murmur3_published_vectors():
    # SMHasher's MurmurHash3_x86_32, as published with the reference code.
    for data, seed, want in [
        (b"", 0, 0), (b"", 1, 0x514E28B7), (b"", 0xFFFFFFFF, 0x81F16F39), (b"\0\0\0\0", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A), (b"aaa", 0x9747B28C, 0x283E0130), (b"aa", 0x9747B28C, 0x5D211726),
        (b"a", 0x9747B28C, 0x7FA09EA6), (b"Hello, world!", 0x9747B28C, 0x24884CBA),
        (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ]:
        assert murmur3_32(data, seed) == want, (data, seed)


def _vectors():
    rows = []
    for line in VECTORS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        name, spec, traffic, key, arm = line.split("\t")
        arms = [(a, int(w)) for a, w in (e.split("=") for e in spec.split(","))]
        rows.append((name, spec, arms, float(traffic), key, arm))
    assert len(rows) >= 50
    return rows


def test_python_function_reproduces_the_vectors():
    for name, spec, arms, traffic, key, arm in _vectors():
        assert (assign(name, key, arms, traffic) or "-") == arm, (name, spec, traffic, key)


def _calibrate_assign(keys, *args):
    run = subprocess.run([str(binary("calibrate")), "experiment", "assign", *args], input="".join(k + "\n" for k in keys),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[-1] == "" and len(lines) == len(keys) + 1, run.stdout[-500:]
    return [line.split("\t")[1] for line in lines[:-1]]


def test_calibrate_assign_agrees_with_python():
    rng = np.random.default_rng(5)
    keys = [f"user-{i}" for i in range(3000)] + [f"{rng.integers(1 << 62)}" for _ in range(500)] + \
           ["Ünïcødé-ключ-" + str(i) for i in range(100)]
    for name, spec, traffic in [("homepage", "A=50,B=30,C=20", 1.0), ("share", "x=1,y=0,z=3", 0.3)]:
        arms = [(a, int(w)) for a, w in (e.split("=") for e in spec.split(","))]
        got = _calibrate_assign(keys, "--name", name, "--arms", spec, "--traffic", str(traffic))
        want = [assign(name, k, arms, traffic) or "-" for k in keys]
        assert got == want, name
    # The experiment of the zoo's configuration, read from the file.
    got = _calibrate_assign(keys[:500], "--sidecar-config", str(ROOT / "tritonmodels" / "zoo" / "sidecar.yaml"), "--experiment", EXPERIMENT)
    assert got == [assign(EXPERIMENT, k, ARMS) for k in keys[:500]]


# ---------------------------------------------------------------- through the sidecar


@pytest.fixture(scope="module")
def addrs():
    names = ["TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR", "SIDECAR_GRPC_ADDR", "SIDECAR_HTTP_ADDR", "SIDECAR_METRICS_ADDR", "SIDECAR_CONFIG"]
    return {name: env(name) for name in names}


@pytest.fixture(scope="module")
def triton(addrs):
    c = grpcclient.InferenceServerClient(addrs["TRITON_GRPC_ADDR"])
    yield c
    c.close()


@pytest.fixture(scope="module")
def components(addrs):
    return pathlib.Path(addrs["SIDECAR_CONFIG"]).resolve().parent / "components.safetensors"


def _client(protocol, addr):
    return (grpcclient if protocol == "grpc" else httpclient).InferenceServerClient(addr)


def _infer(client, x, model="fashion_ab", headers=None, parameters=None):
    """(logits, react-preference, react-arm parameter, react-arm header or None)."""
    grpc = isinstance(client, grpcclient.InferenceServerClient)
    module = grpcclient if grpc else httpclient
    inp = module.InferInput(IMAGE, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    if grpc:
        # tritonclient.grpc does not expose response headers: the same
        # request, built by tritonclient, through its stub's with_call.
        req = grpc_utils._get_inference_request(model_name=model, inputs=[inp], model_version="", request_id="",
                                            outputs=None, sequence_id=0, sequence_start=False, sequence_end=False,
                                            priority=0, timeout=None, parameters=parameters)
        metadata = tuple((k.lower(), v) for k, v in (headers or {}).items())
        resp, call = client._client_stub.ModelInfer.with_call(req, metadata=metadata, timeout=60)
        header = dict(call.initial_metadata()).get("react-arm")
        result = grpcclient.InferResult(resp)
        params = resp.parameters
        arm = params["react-arm"].string_param if "react-arm" in params else None
        return result.as_numpy(LOGITS), params["react-preference"].string_param, arm, header
    result = client.infer(model, [inp], headers=dict(headers) if headers else None, parameters=parameters)
    params = result.get_response().get("parameters", {})
    return result.as_numpy(LOGITS), params["react-preference"], params.get("react-arm"), None


def _http_arm_header(addr, x, key):
    """The react-arm HTTP response header, from a raw JSON request."""
    from sidecar_helpers import http_request, json_infer_body
    status, headers, body = http_request(addr, "POST", "/v2/models/fashion_ab/infer", json_infer_body({IMAGE: x}),
                                         {"Content-Type": "application/json", "X-User-Id": key})
    assert status == 200, body
    return headers.get("react-arm"), json.loads(body)["parameters"]["react-arm"]


def _softmax_max(logits):
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return p.max(axis=1)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_keyed_requests_get_their_arm(addrs, triton, components, protocol):
    client = _client(protocol, addrs[f"SIDECAR_{protocol.upper()}_ADDR"])
    x = images("fashion", 24, seed=11)
    before = scrape(addrs["SIDECAR_METRICS_ADDR"])
    sent = collections.Counter()
    confidence = collections.defaultdict(float)
    for i in range(12):
        key = f"{protocol}-user-{i}"
        arm = assign(EXPERIMENT, key, ARMS)
        batch = x[2 * i:2 * i + 2]
        # Half the keys in the header, half in the user_id parameter.
        if i % 2:
            logits, pref, arm_param, arm_header = _infer(client, batch, headers={"x-user-id": key})
        else:
            logits, pref, arm_param, arm_header = _infer(client, batch, parameters={"user_id": key})
        assert arm_param == arm and pref == ARM_CANONICAL[arm], (key, arm_param, pref, arm)
        if protocol == "grpc":
            assert arm_header == arm
        want = reference_logits(triton, batch, ARM_PREFERENCE[arm], components)
        assert_close(logits, want, what=f"{key} ({arm})")
        sent[arm] += 1
        confidence[arm] += float(_softmax_max(want).sum())
    assert set(sent) == {"merged", "react"}, sent
    if protocol == "http":
        key = "http-header-user"
        assert _http_arm_header(addrs["SIDECAR_HTTP_ADDR"], x[:1], key) == (assign(EXPERIMENT, key, ARMS),) * 2
        sent[assign(EXPERIMENT, key, ARMS)] += 1
        confidence[assign(EXPERIMENT, key, ARMS)] += float(_softmax_max(
            reference_logits(triton, x[:1], ARM_PREFERENCE[assign(EXPERIMENT, key, ARMS)], components)).sum())
    # Keyless requests get an arm; an explicit preference overrides it.
    for _ in range(3):
        _, _, arm, _ = _infer(client, x[:1])
        assert arm in ("merged", "react")
        sent["random"] += 1
    logits, pref, arm, _ = _infer(client, x[:1], headers={"x-user-id": "someone", "react-preference": "mnist=1"})
    assert arm is None and pref == "mnist=1"

    after = scrape(addrs["SIDECAR_METRICS_ADDR"])
    labels = dict(model="fashion_ab", experiment=EXPERIMENT)

    def delta(name, **more):
        return metric(after, name, **labels, **more) - metric(before, name, **labels, **more)

    for arm in ("merged", "react"):
        assert delta("react_experiment_requests_total", arm=arm, assignment="key") == sent[arm], arm
        rows = 2 * sum(1 for i in range(12) if assign(EXPERIMENT, f"{protocol}-user-{i}", ARMS) == arm) + \
            (protocol == "http" and assign(EXPERIMENT, "http-header-user", ARMS) == arm)
        keyed_rows = delta("react_experiment_top1_confidence_count", arm=arm, task="fashion") - \
            delta("react_experiment_requests_total", arm=arm, assignment="random")
        assert keyed_rows == rows, arm
        assert delta("react_experiment_request_duration_seconds_count", arm=arm) == \
            delta("react_experiment_requests_total", arm=arm)
    assert delta("react_experiment_requests_total", assignment="random") == sent["random"]
    assert delta("react_experiment_overrides_total") == 1
    assert delta("react_experiment_request_errors_total") == 0
    # The confidences the sidecar summed, against the reference logits'.
    keyless_conf = sum(delta("react_experiment_top1_confidence_sum", arm=a) for a in ("merged", "react")) - \
        sum(confidence.values())
    assert 0 < keyless_conf <= sent["random"] + 1e-6  # the keyless rows: one each, confidence ≤ 1
    predicted = sum(delta("react_experiment_predictions_total", arm=a) for a in ("merged", "react"))
    assert predicted == sum(delta("react_experiment_top1_confidence_count", arm=a) for a in ("merged", "react"))


# ---------------------------------------------------------------- dedicated sidecars


def _experiment_config(addrs, components, weights):
    triton = types.SimpleNamespace(grpc=addrs["TRITON_GRPC_ADDR"], http=addrs["TRITON_HTTP_ADDR"])
    models = [{"name": "fashion_ab", "components": "zoo",
               "backbone": {"model": "backbone_adamerging", "output": "feature"},
               "heads": [{"task": "fashion", "model": "head_fashion"}]}]
    experiments = [{"name": EXPERIMENT, "models": ["fashion_ab"], "key": {"header": "x-user-id"},
                    "arms": [{"name": "merged", "weight": weights[0], "preference": "none"},
                             {"name": "react", "weight": weights[1], "preference": "fashion=1"}]}]
    return sidecar_config(triton, {"zoo": (components, None)}, models, experiments=experiments)


def test_two_sidecars_assign_alike(addrs, components, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(_experiment_config(addrs, components, (50, 50))))
    sidecars = [Sidecar(path, tmp_path).start(), Sidecar(path, tmp_path).start()]
    try:
        clients = [grpcclient.InferenceServerClient(s.grpc) for s in sidecars]
        x = images("fashion", 1, seed=3)
        arms = collections.Counter()
        for i in range(30):
            key = f"replica-user-{i}"
            got = [_infer(c, x, headers={"x-user-id": key})[2] for c in clients]
            assert got == [assign(EXPERIMENT, key, ARMS)] * 2, key
            arms[got[0]] += 1
        assert set(arms) == {"merged", "react"}
    finally:
        for s in sidecars:
            s.stop()


def test_reload_changes_weights_under_load(addrs, components, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(_experiment_config(addrs, components, (50, 50))))
    side = Sidecar(path, tmp_path).start()
    new_arms = [("merged", 90), ("react", 10)]
    try:
        client = grpcclient.InferenceServerClient(side.grpc)
        x = images("fashion", 1, seed=4)
        stop, seen, errors = threading.Event(), [], []

        def load():
            c = grpcclient.InferenceServerClient(side.grpc)
            i = 0
            while not stop.is_set():
                key = f"load-user-{i % 64}"
                try:
                    seen.append((key, _infer(c, x, headers={"x-user-id": key})[2]))
                except Exception as err:  # noqa: BLE001 - any failure fails the test below
                    errors.append(repr(err))
                i += 1

        threads = [threading.Thread(target=load) for _ in range(2)]
        for t in threads:
            t.start()
        wait_for("requests under load", lambda: len(seen) >= 20, timeout=60)
        reloads = metric(scrape(side.metrics), "react_config_reloads_total", result="success")
        atomic_write(path, config_text(_experiment_config(addrs, components, (90, 10))))
        wait_for("the reload", lambda: metric(scrape(side.metrics), "react_config_reloads_total", result="success") > reloads,
                 timeout=60)
        served_before = len(seen)
        wait_for("requests after the reload", lambda: len(seen) >= served_before + 20, timeout=60)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors[:5]
        # Every answer is the old split's or the new one's; the last ones the new.
        for key, arm in seen:
            assert arm in (assign(EXPERIMENT, key, ARMS), assign(EXPERIMENT, key, new_arms)), (key, arm)
        for key, arm in seen[-10:]:
            assert arm == assign(EXPERIMENT, key, new_arms), (key, arm)
        # The metrics show the new split: 200 new keys, counted per arm.
        before = scrape(side.metrics)
        want = collections.Counter()
        for i in range(200):
            key = f"after-{i}"
            arm = _infer(client, x, headers={"x-user-id": key})[2]
            assert arm == assign(EXPERIMENT, key, new_arms)
            want[arm] += 1
        after = scrape(side.metrics)
        for arm in ("merged", "react"):
            got = metric(after, "react_experiment_requests_total", arm=arm, assignment="key") - \
                metric(before, "react_experiment_requests_total", arm=arm, assignment="key")
            assert got == want[arm], arm
        assert want["merged"] > 3 * want["react"] > 0, want  # 90/10, not 50/50
    finally:
        side.stop()
