"""The ReACT sidecar's promises to its users, checked with the official
tritonclient (and raw HTTP and perf_analyzer) against the Triton and the
sidecar that scripts/test.sh runs (the zoo's configuration,
tritonmodels/zoo/sidecar.yaml, in front of triton/testdata/repo and
tritonmodels/repo).

Every expected value is computed independently of the sidecar: Triton's own
ensembles for answers without a preference; for corrected answers the
backbone and the head called directly on Triton, W_p written by
`bin/calibrate solve`, and the product in float64.

Needs TRITON_GRPC_ADDR, TRITON_HTTP_ADDR, SIDECAR_GRPC_ADDR,
SIDECAR_HTTP_ADDR, SIDECAR_METRICS_ADDR, SIDECAR_CONFIG and
ZOO_MODEL_REPOSITORY (exported by scripts/test.sh), and the zoo data; without
them the tests skip, or fail when REACT_E2E=1. Dedicated instances (faults,
reloads, limits, start-up, scripts/serve) are in test_sidecar_ops.py.
"""

import csv
import gzip
import json
import pathlib
import queue
import random
import re
import subprocess
import zlib

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from sidecar_helpers import (IMAGE, LOGITS, MANIFEST, TASKS, assert_close, grpc_infer, http_ready, http_request,
                             images, json_infer_body, metric, reference_logits, scrape)
from testenv import PERF_ANALYZER, ZOO_REPO, env, missing

PROTOCOLS = ["grpc", "http"]
PRESETS = ["digits-first", "scripts", "uniform"]
# The canonical forms the sidecar must echo, written out here (not computed
# by the code under test): weights rounded to 1e-6, summing to exactly 1,
# in the components file's task order.
UNIFORM = "fashion=0.166667,mnist=0.166667,digits=0.166667,letters=0.166667,greek=0.166666,fontdigits=0.166666"
DIGITS_FIRST = "fashion=0.1,mnist=0.1,digits=0.5,letters=0.1,greek=0.1,fontdigits=0.1"
SCRIPTS = "letters=0.5,greek=0.5"
# The controllable models of the zoo's configuration.
CONTROLLABLE = [*TASKS, "all_tasks", "fashion_fp16", "fashion_ab", *(f"{t}_ta" for t in TASKS)]
# What each model tested numerically runs: backbone, head, components file
# (in the directory of SIDECAR_CONFIG), and the task whose images it gets.
PIPELINES = {
    "fashion": ("backbone_adamerging", "head_fashion", "components.safetensors", "fashion"),
    "fashion_fp16": ("backbone_adamerging_fp16", "head_fashion", "components.safetensors", "fashion"),
    "mnist_ta": ("backbone_ta", "head_mnist", "components_ta.safetensors", "mnist"),
}
ICL = "Inference-Header-Content-Length"


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def addrs():
    names = ["TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR", "SIDECAR_GRPC_ADDR", "SIDECAR_HTTP_ADDR",
             "SIDECAR_METRICS_ADDR", "SIDECAR_CONFIG", "ZOO_MODEL_REPOSITORY"]
    values = {name: env(name) for name in names}
    if pathlib.Path(values["ZOO_MODEL_REPOSITORY"]).resolve() != ZOO_REPO:
        missing(f"ZOO_MODEL_REPOSITORY={values['ZOO_MODEL_REPOSITORY']} is not this checkout's {ZOO_REPO}")
    return values


@pytest.fixture(scope="module")
def clients(addrs):
    """tritonclient clients: "grpc" and "http" of the sidecar, "triton" and
    "triton_http" of Triton itself."""
    c = {
        "grpc": grpcclient.InferenceServerClient(addrs["SIDECAR_GRPC_ADDR"]),
        "http": httpclient.InferenceServerClient(addrs["SIDECAR_HTTP_ADDR"]),
        "triton": grpcclient.InferenceServerClient(addrs["TRITON_GRPC_ADDR"]),
        "triton_http": httpclient.InferenceServerClient(addrs["TRITON_HTTP_ADDR"]),
    }
    yield c
    for client in c.values():
        client.close()


@pytest.fixture(scope="module")
def components(addrs):
    """The components files the zoo's configuration names, by file name."""
    root = pathlib.Path(addrs["SIDECAR_CONFIG"]).resolve().parent
    files = {name: root / name for name in ("components.safetensors", "components_ta.safetensors")}
    for path in files.values():
        if not path.is_file():
            missing(f"no components file {path}")
    return files


def _infer(clients, protocol, model, x, headers=None, parameters=None, outputs=None, datatype="FP32",
           input_name=IMAGE, **kwargs):
    """model through the client clients[protocol] (binary data)."""
    module = grpcclient if isinstance(clients[protocol], grpcclient.InferenceServerClient) else httpclient
    inp = module.InferInput(input_name, list(x.shape), datatype)
    inp.set_data_from_numpy(x)
    outs = [module.InferRequestedOutput(o) for o in outputs] if outputs else None
    # Copies: tritonclient.http adds its own headers to the dict it is given.
    return clients[protocol].infer(model, [inp], outputs=outs, headers=dict(headers) if headers else None,
                                   parameters=dict(parameters) if parameters else None, **kwargs)


def _echoed(result, protocol):
    """The react-preference response parameter."""
    if protocol == "grpc":
        params = result.get_response().parameters
        assert "react-preference" in params, params
        return params["react-preference"].string_param
    return result.get_response()["parameters"]["react-preference"]


def _output_names(result, protocol):
    if protocol == "grpc":
        return [o.name for o in result.get_response().outputs]
    return [o["name"] for o in result.get_response()["outputs"]]


def _status(err):
    """The gRPC code name or the HTTP status of a tritonclient error."""
    return str(err.status()).replace("StatusCode.", "")


def _error(call):
    with pytest.raises(InferenceServerException) as info:
        call()
    return _status(info.value), info.value.message()


def _triton_serves(addrs, clients):
    """Triton itself is ready and answers an inference directly."""
    assert http_ready(addrs["TRITON_HTTP_ADDR"]), "Triton's /v2/health/ready is not 200"
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5
    y = grpc_infer(clients["triton"], "affine_fp32", {"INPUT0": x}).as_numpy("OUTPUT0")
    np.testing.assert_array_equal(y, 2 * x + 1)


# ---------------------------------------------------------------- drop-in


def test_dropin_grpc_without_preference(clients):
    """No preference: exactly the ensemble Triton serves under the same name."""
    x = images("fashion", 8, seed=1)
    want = grpc_infer(clients["triton"], "fashion", {IMAGE: x}).as_numpy(LOGITS)
    result = _infer(clients, "grpc", "fashion", x)
    got = result.as_numpy(LOGITS)
    assert got.dtype == np.float32 and got.shape == (8, MANIFEST["tasks"]["fashion"]["num_classes"])
    assert np.array_equal(got, want)
    assert _echoed(result, "grpc") == "none"


@pytest.mark.parametrize("inputs,outputs", [("binary", "binary"), ("json", "json"), ("binary", "json"), ("json", "binary")])
def test_dropin_http_without_preference(clients, inputs, outputs):
    """Over HTTP, with inputs and outputs as binary data or JSON, the sidecar
    and Triton both answer exactly Triton's ensemble output."""
    x = images("fashion", 8, seed=2)
    want = grpc_infer(clients["triton"], "fashion", {IMAGE: x}).as_numpy(LOGITS)
    for target in ("http", "triton_http"):
        inp = httpclient.InferInput(IMAGE, list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=inputs == "binary")
        out = httpclient.InferRequestedOutput(LOGITS, binary_data=outputs == "binary")
        result = clients[target].infer("fashion", [inp], outputs=[out])
        tensor = result.get_output(LOGITS)
        assert ("binary_data_size" in tensor.get("parameters", {})) == (outputs == "binary"), tensor
        got = result.as_numpy(LOGITS)
        assert got.dtype == np.float32, target
        assert np.array_equal(got, want), f"{target}: differs from Triton's fashion ensemble"
        if target == "http":
            assert _echoed(result, "http") == "none"


def _outcome(clients, target, x, outputs=None, **kwargs):
    """fashion's answer through clients[target]: ("ok", outputs as arrays,
    response id) or ("error", code)."""
    module = grpcclient if isinstance(clients[target], grpcclient.InferenceServerClient) else httpclient
    inp = module.InferInput(IMAGE, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    try:
        result = clients[target].infer("fashion", [inp], outputs=outputs, **kwargs)
    except InferenceServerException as err:
        return ("error", _status(err))
    response = result.get_response()
    rid = response.id if isinstance(response, service_pb2.ModelInferResponse) else response.get("id", "")
    return ("ok", [result.as_numpy(o) for o in _output_names(result, "grpc" if module is grpcclient else "http")], rid)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", ["class_count", "request_id", "batch_0", "gzip", "deflate"])
def test_dropin_details(clients, protocol, case):
    """The same request to the sidecar's fashion and to Triton's ensemble
    gets the same answer: Triton's classification extension on the output,
    the request id echoed, an empty batch, compressed messages or bodies."""
    module = grpcclient if protocol == "grpc" else httpclient
    x, kwargs = images("fashion", 3, seed=12), {}
    if case == "class_count":
        kwargs["outputs"] = [module.InferRequestedOutput(LOGITS, class_count=3)]
    elif case == "request_id":
        kwargs["request_id"] = "req-42"
    elif case == "batch_0":
        x = np.zeros((0, 1, 28, 28), np.float32)
    elif protocol == "grpc":
        kwargs["compression_algorithm"] = case
    else:
        kwargs.update(request_compression_algorithm=case, response_compression_algorithm=case)
    got = _outcome(clients, protocol, x, **kwargs)
    want = _outcome(clients, "triton" if protocol == "grpc" else "triton_http", x, **kwargs)
    assert got[0] == want[0] and (got[0] == "error" or got[2] == want[2]), (got, want)
    if got[0] == "ok":
        assert len(got[1]) == len(want[1]) and all(np.array_equal(a, b) for a, b in zip(got[1], want[1]))
    else:
        assert got[1] == want[1]


# ---------------------------------------------------------------- preferences

# (id, protocol, where the preference goes, value, canonical form echoed)
PREFERENCE_CASES = [
    ("grpc-header", "grpc", "header", "fashion=0.6,mnist=0.4", "fashion=0.6,mnist=0.4"),
    ("grpc-parameter", "grpc", "parameter", "mnist=2,fashion=3", "fashion=0.6,mnist=0.4"),
    ("http-header", "http", "header", " fashion = 3 , mnist=2 ", "fashion=0.6,mnist=0.4"),
    ("http-parameter", "http", "parameter", "fashion=1,mnist=1,digits=1,letters=1,greek=1,fontdigits=1", UNIFORM),
    ("grpc-preset-header", "grpc", "preset-header", "uniform", UNIFORM),
    ("grpc-preset-parameter", "grpc", "preset-parameter", "digits-first", DIGITS_FIRST),
    ("http-preset-header", "http", "preset-header", "scripts", SCRIPTS),
    ("http-preset-parameter", "http", "preset-parameter", "digits-first", DIGITS_FIRST),
]


def _placed(where, value):
    """(headers, parameters) carrying value as where says."""
    key = "react-preset" if where.startswith("preset") else "react-preference"
    if where.endswith("header"):
        return {key: value}, None
    return None, {key: value}


def _preference_params():
    params = [pytest.param("fashion", *case[1:], id=f"fashion-{case[0]}") for case in PREFERENCE_CASES]
    for model in ("fashion_fp16", "mnist_ta"):
        for case in PREFERENCE_CASES:
            if case[0] in ("grpc-parameter", "http-header", "grpc-preset-header"):
                params.append(pytest.param(model, *case[1:], id=f"{model}-{case[0]}"))
    return params


@pytest.mark.parametrize("model,protocol,where,value,canonical", _preference_params())
def test_preference_is_applied(clients, addrs, components, model, protocol, where, value, canonical):
    """logits = head(W_p · backbone(x)) for the preference the request
    names, echoed in canonical form (and, over HTTP, in a header)."""
    backbone, head, comps, task = PIPELINES[model]
    x = images(task, 5, seed=3)
    want = reference_logits(clients["triton"], x, canonical, components[comps], backbone, head)
    # Without the correction the answer would differ by far more than the
    # tolerance: the test can tell corrected from uncorrected.
    plain = reference_logits(clients["triton"], x, None, components[comps], backbone, head)
    assert np.abs(plain - want).max() > 100 * 1e-4 * np.abs(want).max()

    headers, parameters = _placed(where, value)
    result = _infer(clients, protocol, model, x, headers=headers, parameters=parameters)
    assert _echoed(result, protocol) == canonical
    assert_close(result.as_numpy(LOGITS), want)

    if protocol == "http":
        # The same request as raw HTTP/JSON: the react-preference response
        # header and the JSON output.
        body = json_infer_body({IMAGE: x}, parameters=parameters)
        status, hdrs, data = http_request(addrs["SIDECAR_HTTP_ADDR"], "POST", f"/v2/models/{model}/infer",
                                          body, headers=headers)
        assert status == 200, data[:500]
        assert hdrs.get("react-preference") == canonical
        answer = json.loads(data)
        assert answer["parameters"]["react-preference"] == canonical
        [out] = answer["outputs"]
        assert_close(np.array(out["data"], dtype=np.float32).reshape(out["shape"]), want)


# (spec as sent, canonical form): weights normalised and rounded to 1e-6,
# summing to exactly 1 (the units lost given to the largest remainders,
# ties to the earlier task), tasks in the components' order, zero weights
# dropped.
CANONICAL_FORMS = [
    ("fashion=1,mnist=1,digits=1", "fashion=0.333334,mnist=0.333333,digits=0.333333"),
    ("fashion=1,mnist=1e-7", "fashion=1"),
    ("fashion=.5,mnist=2.", "fashion=0.2,mnist=0.8"),
    ("fashion=5E+2,mnist=500", "fashion=0.5,mnist=0.5"),
    ("greek=1e-3,letters=3e-3", "letters=0.75,greek=0.25"),
    ("fashion=0.1234567,mnist=0.8765433", "fashion=0.123457,mnist=0.876543"),
]


@pytest.mark.parametrize("spec,canonical", CANONICAL_FORMS)
def test_canonical_form(clients, components, spec, canonical):
    x = images("fashion", 2, seed=13)
    result = _infer(clients, "grpc", "fashion", x, parameters={"react-preference": spec})
    assert _echoed(result, "grpc") == canonical
    assert_close(result.as_numpy(LOGITS), reference_logits(clients["triton"], x, canonical,
                                                           components["components.safetensors"]))


def test_typed_grpc_contents(addrs):
    """Inputs as typed contents (not raw bytes) are taken too, with the
    answer Triton's ensemble gives."""
    x = images("fashion", 2, seed=14)

    def call(addr):
        request = service_pb2.ModelInferRequest(model_name="fashion")
        tensor = request.inputs.add(name=IMAGE, datatype="FP32", shape=list(x.shape))
        tensor.contents.fp32_contents.extend(x.ravel().tolist())
        with grpc.insecure_channel(addr) as channel:
            response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
        return np.frombuffer(response.raw_output_contents[0], "<f4")

    assert np.array_equal(call(addrs["SIDECAR_GRPC_ADDR"]), call(addrs["TRITON_GRPC_ADDR"]))


def test_grpc_response_metadata_carries_preference(addrs):
    """Over gRPC the applied preference also comes back as response metadata."""
    x = images("fashion", 1, seed=4)
    request = service_pb2.ModelInferRequest(model_name="fashion")
    request.inputs.add(name=IMAGE, datatype="FP32", shape=list(x.shape))
    request.raw_input_contents.append(x.astype("<f4").tobytes())
    with grpc.insecure_channel(addrs["SIDECAR_GRPC_ADDR"]) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        response, call = stub.ModelInfer.with_call(request, metadata=[("react-preset", "scripts")], timeout=30)
    assert dict(call.initial_metadata()).get("react-preference") == SCRIPTS
    assert response.parameters["react-preference"].string_param == SCRIPTS
    # Output data come back as raw_output_contents, as from Triton.
    assert [o.name for o in response.outputs] == [LOGITS] and not response.outputs[0].HasField("contents")
    assert len(response.raw_output_contents) == 1 and len(response.raw_output_contents[0]) == 4 * 10


# (id, headers, parameters, canonical applied)
PRECEDENCE_CASES = [
    ("header-beats-parameter", {"react-preference": "fashion=1"}, {"react-preference": "mnist=1"}, "fashion=1"),
    ("parameter-beats-preset-header", {"react-preset": "scripts"}, {"react-preference": "mnist=1"}, "mnist=1"),
    ("header-beats-preset", {"react-preference": "mnist=1"}, {"react-preset": "uniform"}, "mnist=1"),
    ("preset-header-beats-preset-parameter", {"react-preset": "scripts"}, {"react-preset": "uniform"}, SCRIPTS),
    ("none-beats-parameter", {"react-preference": "none"}, {"react-preference": "mnist=1"}, "none"),
    ("parameter-none-beats-preset", {"react-preset": "uniform"}, {"react-preference": "none"}, "none"),
    ("no-default", None, {"other": "x"}, "none"),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", PRECEDENCE_CASES, ids=[c[0] for c in PRECEDENCE_CASES])
def test_preference_precedence(clients, components, protocol, case):
    _, headers, parameters, canonical = case
    x = images("fashion", 3, seed=5)
    result = _infer(clients, protocol, "fashion", x, headers=headers, parameters=parameters)
    assert _echoed(result, protocol) == canonical
    if canonical == "none":
        want = grpc_infer(clients["triton"], "fashion", {IMAGE: x}).as_numpy(LOGITS)
        assert np.array_equal(result.as_numpy(LOGITS), want)
    else:
        want = reference_logits(clients["triton"], x, canonical, components["components.safetensors"])
        assert_close(result.as_numpy(LOGITS), want)


# ---------------------------------------------------------------- all_tasks


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("preference", [None, "digits=1,fashion=1"])
def test_all_tasks_returns_every_head(clients, protocol, preference):
    """One request, six heads: logits_<task> for every task, each equal to
    the single-task controllable model's answer with the same preference."""
    x = np.concatenate([images(t, 2, seed=6) for t in ("fashion", "digits")])
    headers = {"react-preference": preference} if preference else None
    result = _infer(clients, protocol, "all_tasks", x, headers=headers)
    assert _output_names(result, protocol) == [f"logits_{t}" for t in TASKS]
    for task in TASKS:
        single = _infer(clients, protocol, task, x, headers=headers).as_numpy(LOGITS)
        got = result.as_numpy(f"logits_{task}")
        assert got.shape == (len(x), MANIFEST["tasks"][task]["num_classes"])
        assert np.array_equal(got, single), task


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_all_tasks_returns_the_outputs_asked_in_order(clients, protocol):
    x = images("greek", 3, seed=7)
    asked = ["logits_greek", "logits_fashion"]
    result = _infer(clients, protocol, "all_tasks", x, outputs=asked, parameters={"react-preference": "greek=1"})
    assert _output_names(result, protocol) == asked
    assert _echoed(result, protocol) == "greek=1"
    for name in asked:
        single = _infer(clients, protocol, name.removeprefix("logits_"), x,
                        parameters={"react-preference": "greek=1"}).as_numpy(LOGITS)
        assert np.array_equal(result.as_numpy(name), single), name


# ---------------------------------------------------------------- errors

# (id, where, value, what the message must name)
BAD_PREFERENCES = [
    ("unknown-task", "header", "bogus=1", ['"bogus"', "unknown task"]),
    ("negative-weight", "parameter", "fashion=-1,mnist=2", ['"-1"', "negative"]),
    ("junk", "header", "fashion==1;;", ["fashion==1;;"]),
    ("no-weight", "parameter", "fashion", ["fashion"]),
    ("zero-sum", "header", "fashion=0,mnist=0", ["sum"]),
    ("unknown-preset-header", "preset-header", "nosuch", ['"nosuch"', "preset"]),
    ("unknown-preset-parameter", "preset-parameter", "nosuch", ['"nosuch"', "preset"]),
    # limits.max_preference_length defaults to 4096 bytes (the react
    # backend's default too: control.DefaultMaxPreferenceLength).
    ("too-long", "header", "fashion=1" + "0" * 4100, ["4109", "4096"]),
    ("too-long-preset", "preset-parameter", "u" * 4097, ["4097", "4096"]),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", BAD_PREFERENCES, ids=[c[0] for c in BAD_PREFERENCES])
def test_bad_preference_is_refused(clients, protocol, case):
    _, where, value, named = case
    headers, parameters = _placed(where, value)
    code, message = _error(lambda: _infer(clients, protocol, "fashion", images("fashion", 1), headers=headers,
                                          parameters=parameters))
    assert code == ("INVALID_ARGUMENT" if protocol == "grpc" else "400"), message
    for word in named:
        assert word in message, message
    # The valid tasks and presets, listed; the tasks once.
    assert message.count(", ".join(TASKS)) == 1, message
    for preset in PRESETS:
        assert preset in message, message


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_presets_belong_to_their_components(clients, protocol):
    """mnist_ta resolves against the TA components entry, whose only preset
    is uniform: another entry's preset is unknown there."""
    code, message = _error(lambda: _infer(clients, protocol, "mnist_ta", images("mnist", 1),
                                          headers={"react-preset": "scripts"}))
    assert code == ("INVALID_ARGUMENT" if protocol == "grpc" else "400"), message
    assert '"scripts"' in message and "presets: uniform" in message, message


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("value", [5, True], ids=["int", "bool"])
def test_non_string_preference_parameter_is_refused(clients, protocol, value):
    code, message = _error(lambda: _infer(clients, protocol, "fashion", images("fashion", 1),
                                          parameters={"react-preference": value}))
    assert code == ("INVALID_ARGUMENT" if protocol == "grpc" else "400"), message
    assert "react-preference" in message and "string" in message, message


# (id, how the request is made wrong, words the message must name)
REQUEST_ERRORS = [
    ("unknown-output", {"outputs": ["logits_x"]}, ["logits_x"]),
    ("batch-257", {"rows": 257}, ["257", "256"]),
    ("wrong-shape", {"shape": (2, 1, 28, 27)}, ["image", "27"]),
    ("wrong-datatype", {"datatype": "FP16"}, ["FP16"]),
    ("unknown-input", {"input_name": "img"}, ["img"]),
    ("version-2", {"model_version": "2"}, ["version", "2"]),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", REQUEST_ERRORS, ids=[c[0] for c in REQUEST_ERRORS])
def test_request_errors_answer_like_triton(clients, protocol, case):
    """A request a controllable model cannot take gets the code (status)
    Triton gives for the same request to its own fashion ensemble, and a
    message naming the problem."""
    _, how, named = case
    how = dict(how)
    x = images("fashion", how.pop("rows", 2), seed=8)
    if "shape" in how:
        x = np.zeros(how.pop("shape"), np.float32)
    if how.get("datatype") == "FP16":
        x = x.astype(np.float16)
    triton = {"grpc": "triton", "http": "triton_http"}[protocol]
    want_code, _ = _error(lambda: _infer(clients, triton, "fashion", x, **how))
    code, message = _error(lambda: _infer(clients, protocol, "fashion", x, **how))
    not_found = "model_version" in how
    assert want_code == {("grpc", False): "INVALID_ARGUMENT", ("grpc", True): "NOT_FOUND",
                         ("http", False): "400", ("http", True): "404"}[protocol, not_found]
    assert code == want_code, message
    for word in named:
        assert word in message, message


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("what", ["metadata", "config", "ready", "statistics"])
def test_unknown_version_answers_like_triton(clients, protocol, what):
    """Drop-in: asking about version 2 of fashion gets what Triton answers
    for version 2 of its own fashion ensemble (metadata and configuration:
    NOT_FOUND / 404; readiness: not ready; statistics: INVALID_ARGUMENT /
    400)."""
    def ask(client):
        kwargs = {"as_json": True} if protocol == "grpc" else {}
        if what == "metadata":
            return client.get_model_metadata("fashion", "2", **kwargs)
        if what == "config":
            return client.get_model_config("fashion", "2", **kwargs)
        if what == "ready":
            return client.is_model_ready("fashion", "2")
        return client.get_inference_statistics("fashion", "2", **kwargs)

    def outcome(client):
        try:
            return ("answer", ask(client))
        except InferenceServerException as err:
            return ("error", _status(err))

    triton = clients["triton" if protocol == "grpc" else "triton_http"]
    assert outcome(clients[protocol]) == outcome(triton)


# ---------------------------------------------------------------- metadata, config, statistics, index


def _json(client, protocol, method, *args):
    kwargs = {"as_json": True} if protocol == "grpc" else {}
    return getattr(client, method)(*args, **kwargs)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_metadata_and_readiness(clients, protocol):
    client = clients[protocol]
    assert client.is_server_ready()
    for model in CONTROLLABLE:
        assert client.is_model_ready(model), model
        assert client.is_model_ready(model, "1"), model
    meta = _json(client, protocol, "get_model_metadata", "fashion")
    ensemble = _json(clients["triton" if protocol == "grpc" else "triton_http"], protocol, "get_model_metadata", "fashion")
    # The ensemble it shadows, signature and platform (checked at start-up).
    assert meta == ensemble and meta["platform"] == "ensemble"
    assert [(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in meta["inputs"]] == [(IMAGE, "FP32", [-1, 1, 28, 28])]

    meta = _json(client, protocol, "get_model_metadata", "all_tasks")
    assert meta["name"] == "all_tasks" and meta["platform"] == "react"
    assert [(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in meta["outputs"]] == [
        (f"logits_{t}", "FP32", [-1, MANIFEST["tasks"][t]["num_classes"]]) for t in TASKS]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["fashion", "fashion_fp16", "mnist_ta", "all_tasks"])
def test_model_config(clients, components, protocol, model):
    config = _json(clients[protocol], protocol, "get_model_config", model)
    config = config.get("config", config)
    assert config["name"] == model
    # The sidecar's own configuration, also for fashion, whose metadata
    # names the platform of the ensemble it shadows.
    assert config["backend"] == "react" and config["platform"] == "react"
    assert int(config["max_batch_size"]) == 256
    assert [(i["name"], [int(d) for d in i["dims"]]) for i in config["input"]] == [(IMAGE, [1, 28, 28])]
    params = {k: v["string_value"] for k, v in config["parameters"].items()}
    backbone, head, comps, _ = PIPELINES.get(model, ("backbone_adamerging", None, "components.safetensors", None))
    assert params["react.backbone"] == f"{backbone}:feature"
    if model == "all_tasks":
        assert params["react.heads"] == ",".join(f"{t}=head_{t}" for t in TASKS)
        assert [o["name"] for o in config["output"]] == [f"logits_{t}" for t in TASKS]
    else:
        assert params["react.heads"] == f"{head.removeprefix('head_')}={head}"
        assert [o["name"] for o in config["output"]] == [LOGITS]
    # The file's name only: the host's paths are not the client's business.
    assert params["react.components"] == components[comps].name
    assert params["react.tasks"] == ",".join(TASKS)
    assert params["react.presets"].split(",") == (PRESETS if comps == "components.safetensors" else ["uniform"])
    assert params["react.default_preference"] == "none"


def _stats(clients, protocol, model):
    """(success, fail, inference_count, execution_count, queue, compute_input,
    compute_infer, compute_output) counts of a model."""
    raw = _json(clients[protocol], protocol, "get_inference_statistics", model)
    [s] = raw["model_stats"]
    assert s["name"] == model and s["version"] == "1"
    inf = s.get("inference_stats", {})

    def count(stage):
        return int(inf.get(stage, {}).get("count", 0))

    return (count("success"), count("fail"), int(s.get("inference_count", 0)), int(s.get("execution_count", 0)),
            count("queue"), count("compute_input"), count("compute_infer"), count("compute_output"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_statistics_count_exactly_the_requests_sent(clients, protocol):
    before = _stats(clients, protocol, "fashion")
    rows = [1, 4, 2]
    for n in rows:
        _infer(clients, protocol, "fashion", images("fashion", n, seed=n), parameters={"react-preference": "fashion=1"})
    _error(lambda: _infer(clients, protocol, "fashion", images("fashion", 3), headers={"react-preference": "bogus=1"}))
    after = _stats(clients, protocol, "fashion")
    success, fail, inferences, executions, *stages = (a - b for a, b in zip(after, before))
    assert (success, inferences, executions, fail) == (len(rows), sum(rows), len(rows), 1)
    # Every successful request passes each stage once, as in Triton.
    assert stages == [len(rows)] * 4
    # Both protocols read the same counts.
    other = "http" if protocol == "grpc" else "grpc"
    assert _stats(clients, other, "fashion") == after
    # The statistics of every model list each controllable model once, with
    # its own counts in place of the ensemble's it shadows.
    every = _json(clients[protocol], protocol, "get_inference_statistics", "")["model_stats"]
    for model in CONTROLLABLE:
        assert [s["version"] for s in every if s["name"] == model] == ["1"], model
    [fashion] = [s for s in every if s["name"] == "fashion"]
    assert int(fashion["inference_stats"]["success"]["count"]) == after[0]
    assert [s for s in every if s["name"] == "backbone_adamerging"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_repository_index_lists_controllable_models(clients, protocol):
    index = clients[protocol].get_model_repository_index(**({"as_json": True} if protocol == "grpc" else {}))
    entries = index.get("models", []) if protocol == "grpc" else index
    by_name = {}
    for e in entries:
        by_name.setdefault(e["name"], []).append(e)
    for model in CONTROLLABLE:
        assert [(e.get("version"), e.get("state")) for e in by_name.get(model, [])] == [("1", "READY")], model
    # Triton's own models are still listed.
    assert [e.get("state") for e in by_name["backbone_adamerging"]] == ["READY"]
    assert "affine_fp32" in by_name


# ---------------------------------------------------------------- perf_analyzer


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_perf_analyzer_through_the_sidecar(clients, addrs, tmp_path, protocol):
    if not PERF_ANALYZER.is_file():
        missing(f"no {PERF_ANALYZER}")
    before = _stats(clients, protocol, "fashion")
    source = "parameter" if protocol == "grpc" else "header"
    requests_before = metric(scrape(addrs["SIDECAR_METRICS_ADDR"]), "react_requests_total", model="fashion",
                             protocol=protocol, source=source)
    report = tmp_path / "perf.csv"
    addr = addrs["SIDECAR_GRPC_ADDR" if protocol == "grpc" else "SIDECAR_HTTP_ADDR"]
    args = [str(PERF_ANALYZER), "-m", "fashion", "-u", addr, "-i", protocol, "-b", "1",
            "--concurrency-range", "2:2", "-p", "1000", "--measurement-mode", "count_windows",
            "--measurement-request-count", "20", "-s", "1000", "-r", "10", "-f", str(report)]
    if protocol == "grpc":
        args += ["--request-parameter", "react-preference:fashion=0.6,mnist=0.4:string"]
    else:
        # perf_analyzer sends request parameters over gRPC only; HTTP gets a header.
        args += ["-H", "react-preference:fashion=0.6,mnist=0.4"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(report) as f:
        [row] = list(csv.DictReader(f))
    assert float(row["Inferences/Second"]) > 0, row
    # perf_analyzer read the sidecar's statistics for its server-side numbers.
    served = re.search(r"Successful request count: (\d+)", run.stdout)
    assert served and int(served.group(1)) > 0, run.stdout[-3000:]
    after = _stats(clients, protocol, "fashion")
    assert after[0] - before[0] >= 20 and after[1] == before[1]
    requests_after = metric(scrape(addrs["SIDECAR_METRICS_ADDR"]), "react_requests_total", model="fashion",
                            protocol=protocol, source=source)
    assert requests_after - requests_before >= 20


# ---------------------------------------------------------------- streaming


def test_stream_mixes_controllable_and_pass_through(clients, addrs, components):
    """One gRPC stream carrying requests for fashion (with preferences as
    request parameters) and for Triton's own affine_fp32: every response
    arrives, matched by id, right; a bad preference fails only its own
    request."""
    rng = np.random.default_rng(9)
    x = images("fashion", 4, seed=9)
    prefs = ["fashion=0.6,mnist=0.4", "mnist=1", None, SCRIPTS]
    want = {p: reference_logits(clients["triton"], x, p, components["components.safetensors"]) for p in prefs}
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(addrs["SIDECAR_GRPC_ADDR"])
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    expected = {}
    try:
        for i in range(24):
            if i % 3 == 0:
                a = rng.uniform(-50, 50, size=(2, 4)).astype(np.float32)
                inp = grpcclient.InferInput("INPUT0", [2, 4], "FP32")
                inp.set_data_from_numpy(a)
                client.async_stream_infer("affine_fp32", [inp], request_id=f"affine-{i}")
                expected[f"affine-{i}"] = ("affine_fp32", 2 * a + 1, None)
            else:
                p = prefs[i % len(prefs)]
                inp = grpcclient.InferInput(IMAGE, list(x.shape), "FP32")
                inp.set_data_from_numpy(x)
                client.async_stream_infer("fashion", [inp], request_id=f"fashion-{i}",
                                          parameters={"react-preference": p} if p else None)
                expected[f"fashion-{i}"] = ("fashion", want[p], p or "none")
            if i == 10:
                inp = grpcclient.InferInput(IMAGE, list(x.shape), "FP32")
                inp.set_data_from_numpy(x)
                client.async_stream_infer("fashion", [inp], request_id="bad", parameters={"react-preference": "bogus=1"})
        got, errors = {}, []
        for _ in range(len(expected) + 1):
            result, error = answers.get(timeout=60)
            if error is not None:
                errors.append(error.message())
            else:
                got[result.get_response().id] = result
    finally:
        client.stop_stream()
        client.close()
    assert len(errors) == 1 and '"bogus"' in errors[0] and "unknown task" in errors[0], errors
    assert sorted(got) == sorted(expected)
    for rid, (model, values, pref) in expected.items():
        result = got[rid]
        assert result.get_response().model_name == model, rid
        if model == "affine_fp32":
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), values)
        else:
            assert result.get_response().parameters["react-preference"].string_param == pref, rid
            assert_close(result.as_numpy(LOGITS), values, what=rid)


def test_stream_metadata_preference_applies_to_every_request(clients, addrs, components):
    """A react-preference sent as the stream's metadata applies to each
    request of the stream, above the requests' own parameters."""
    x = images("fashion", 2, seed=10)
    want = reference_logits(clients["triton"], x, "mnist=1", components["components.safetensors"])
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(addrs["SIDECAR_GRPC_ADDR"])
    client.start_stream(callback=lambda result, error: answers.put((result, error)), headers={"react-preference": "mnist=1"})
    try:
        for i, params in enumerate([None, {"react-preference": "fashion=1"}, {"react-preset": "uniform"}]):
            inp = grpcclient.InferInput(IMAGE, list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            client.async_stream_infer("fashion", [inp], request_id=str(i), parameters=params)
        results = [answers.get(timeout=60) for _ in range(3)]
    finally:
        client.stop_stream()
        client.close()
    for result, error in results:
        assert error is None, error
        assert result.get_response().parameters["react-preference"].string_param == "mnist=1"
        assert_close(result.as_numpy(LOGITS), want)


def test_stream_bad_metadata_preference_fails_only_controllable_requests(addrs):
    """A bad react-preference in a stream's metadata fails each request for
    a controllable model, with its error, and none for other models."""
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(addrs["SIDECAR_GRPC_ADDR"])
    client.start_stream(callback=lambda result, error: answers.put((result, error)), headers={"react-preference": "bogus=1"})
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    try:
        for i in range(2):
            inp = grpcclient.InferInput(IMAGE, [1, 1, 28, 28], "FP32")
            inp.set_data_from_numpy(images("fashion", 1))
            client.async_stream_infer("fashion", [inp], request_id=f"fashion-{i}")
            inp = grpcclient.InferInput("INPUT0", [2, 4], "FP32")
            inp.set_data_from_numpy(a)
            client.async_stream_infer("affine_fp32", [inp], request_id=f"affine-{i}")
        results = [answers.get(timeout=60) for _ in range(4)]
    finally:
        client.stop_stream()
        client.close()
    errors = [e.message() for r, e in results if e is not None]
    ok = {r.get_response().id: r.as_numpy("OUTPUT0") for r, e in results if e is None}
    assert len(errors) == 2 and all('"bogus"' in m for m in errors), errors
    assert sorted(ok) == ["affine-0", "affine-1"]
    for y in ok.values():
        np.testing.assert_array_equal(y, 2 * a + 1)


# ---------------------------------------------------------------- the HTTP shield


def _rejected(addrs):
    return metric(scrape(addrs["SIDECAR_METRICS_ADDR"]), "react_rejected_requests_total")


def _error_message(body):
    message = json.loads(body)["error"]
    assert isinstance(message, str) and message, body[:300]
    return message


@pytest.mark.parametrize("model", ["affine_fp32", "fashion"])
def test_shield_refuses_the_body_that_crashes_triton(clients, addrs, model):
    """The 10 MB junk body with Inference-Header-Content-Length: 20, which
    makes Triton 2.51 itself crash, is refused by the sidecar (never sent to
    Triton directly here) with the answer Triton gives a JSON header it
    cannot parse (500, rapidjson's reason: the header starts with a NUL),
    and Triton keeps serving."""
    junk = b"\x00\xff" + random.Random(11).randbytes(10_000_000 - 2)
    before = _rejected(addrs)
    status, _, body = http_request(addrs["SIDECAR_HTTP_ADDR"], "POST", f"/v2/models/{model}/infer", junk,
                                   {ICL: "20", "Content-Type": "application/octet-stream"})
    assert status == 500, body[:300]
    assert _error_message(body) == "failed to parse the request JSON buffer: The document is empty. at 0"
    assert _rejected(addrs) - before == 1
    _triton_serves(addrs, clients)


def _affine_binary(rows, rnd, size=None, shape_rows=None):
    """A binary affine_fp32 request: its body and Inference-Header-Content-Length
    header; size and shape_rows make binary_data_size or the shape lie."""
    data = rnd.randbytes(16 * rows)
    header = json.dumps({"inputs": [{"name": "INPUT0", "shape": [shape_rows or rows, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(data) if size is None else size}}]}).encode()
    return header + data, {ICL: str(len(header))}


def _gzip(chunks):
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([co.compress(c) for c in chunks] + [co.flush()])


def _fuzz_cases(seed=20261123):
    """A seeded family of malformed HTTP inference requests:
    (kind, body, headers, status the sidecar must answer). A JSON header that
    does not parse gets Triton's own answer, 500 (rapidjson's reason); the
    other problems the sidecar's 400 or 413. (A header length that is not a
    number is no longer among them: Triton reads it with atoi, and so does
    the sidecar; tests/test_sidecar_passthrough.py compares the answers.)"""
    rnd = random.Random(seed)
    cases = []
    for _ in range(3):
        rows = rnd.randint(1, 6)
        good, hdr = _affine_binary(rows, rnd)
        length = int(hdr[ICL])
        cases += [
            ("truncated binary", good[:len(good) - rnd.randint(1, 16 * rows)], hdr),
            ("header length beyond the body", good, {ICL: str(len(good) + rnd.randint(1, 10**6))}),
            ("negative header length", good, {ICL: str(-rnd.randint(1, 10**4))}),
            ("header length inside the JSON", good, {ICL: str(rnd.randint(1, length - 1))}),
            ("lying binary_data_size", *_affine_binary(rows, rnd, size=16 * rows + rnd.randint(1, 4096))),
            ("byte size disagrees with shape", *_affine_binary(rows, rnd, shape_rows=rows + rnd.randint(1, 9))),
            ("JSON garbage", bytes([rnd.choice(b"]:,x}\x00\xff")]) + rnd.randbytes(rnd.randint(0, 2000)), {}),
            ("truncated JSON", json_infer_body({"INPUT0": np.ones((rows, 4), np.float32)})[:rnd.randint(1, 40)], {}),
            ("deeply nested JSON", b'{"inputs":' + b"[" * rnd.randint(100, 200000), {}),
            ("deeply nested unknown key", b'{"x":' + b'{"a":' * rnd.randint(100, 50000) + b"1" + b"}" * 3, {}),
            ("deeply nested valid JSON", b'{"x":' + b"[" * (n := rnd.randint(100, 100000)) + b"]" * n + b',"inputs":[]}', {}),
        ]
    # Deep nesting (which crashes Triton) is refused as such, 400, valid or not.
    unparsable = {"JSON garbage", "truncated JSON", "header length inside the JSON"}
    cases = [(kind, body, headers, 500 if kind in unparsable else 400) for kind, body, headers in cases]
    # A gzip bomb: 1 GiB of zeros in ~1 MB, over the 128 MiB default of
    # limits.max_inflight_bytes (which bounds a request before
    # limits.max_request_bytes, 2 GiB - 1 by default).
    cases.append(("gzip bomb", _gzip([b"\0" * (1 << 20)] * 1024), {"Content-Encoding": "gzip"}, 413))
    cases.append(("gzip of garbage", gzip.compress(b"[[[" + rnd.randbytes(5000)), {"Content-Encoding": "gzip"}, 500))
    cases.append(("corrupt gzip", b"\x1f\x8b\x08\x00" + rnd.randbytes(500), {"Content-Encoding": "gzip"}, 400))
    return cases


def test_shield_refuses_a_fuzzed_family(clients, addrs):
    """Every malformed body is answered by the sidecar itself (the rejection
    counter grows by exactly their number: none reached Triton), with
    Triton's status where Triton refuses it, and Triton is up and serving at
    the end."""
    cases = _fuzz_cases()
    before = _rejected(addrs)
    wrong = []
    for kind, body, headers, want in cases:
        for model in ("affine_fp32", "fashion"):
            status, _, answer = http_request(addrs["SIDECAR_HTTP_ADDR"], "POST", f"/v2/models/{model}/infer", body,
                                             headers)
            if status != want or not json.loads(answer).get("error"):
                wrong.append(f"{kind} ({model}): {status} {answer[:200]!r}")
    assert not wrong, "\n".join(wrong)
    assert _rejected(addrs) - before == 2 * len(cases)
    _triton_serves(addrs, clients)
    # The sidecar still serves too.
    x = images("fashion", 2)
    assert np.array_equal(_infer(clients, "http", "fashion", x).as_numpy(LOGITS),
                          grpc_infer(clients["triton"], "fashion", {IMAGE: x}).as_numpy(LOGITS))


def test_unsupported_content_encoding(addrs):
    body = json_infer_body({"INPUT0": np.ones((1, 4), np.float32)})
    before = metric(scrape(addrs["SIDECAR_METRICS_ADDR"]), "react_rejected_requests_total", reason="encoding")
    status, headers, answer = http_request(addrs["SIDECAR_HTTP_ADDR"], "POST", "/v2/models/affine_fp32/infer", body,
                                           {"Content-Encoding": "br"})
    assert status == 501, answer[:300]
    assert "br" in _error_message(answer)
    after = metric(scrape(addrs["SIDECAR_METRICS_ADDR"]), "react_rejected_requests_total", reason="encoding")
    assert after - before == 1


# ---------------------------------------------------------------- metrics


def test_metrics(clients, addrs):
    """Per-model request counts by source, stage durations, W_p cache
    lookups by result, and no raw preference in any label."""
    weights = random.Random().sample(range(1, 1000), 2)  # a preference no other test sent
    pref = f"fashion={weights[0]},digits={weights[1]}"
    before = scrape(addrs["SIDECAR_METRICS_ADDR"])
    x = images("fashion", 1)
    _infer(clients, "grpc", "fashion", x, parameters={"react-preference": pref})
    after_miss = scrape(addrs["SIDECAR_METRICS_ADDR"])
    _infer(clients, "grpc", "fashion", x, parameters={"react-preference": pref})
    # Another spelling of the same preference shares its W_p.
    _infer(clients, "grpc", "fashion", x,
           parameters={"react-preference": f"digits={2 * weights[1]}, fashion = {2 * weights[0]}"})
    after_hit = scrape(addrs["SIDECAR_METRICS_ADDR"])
    _infer(clients, "http", "fashion", x, headers={"react-preset": "uniform"})
    after = scrape(addrs["SIDECAR_METRICS_ADDR"])

    def delta(a, b, name, **labels):
        return metric(b, name, **labels) - metric(a, name, **labels)

    lookups = "react_wp_cache_lookups_total"
    assert delta(before, after_miss, lookups, components="adamerging", result="miss") == 1
    assert delta(before, after_miss, lookups, components="adamerging", result="hit") == 0
    assert delta(after_miss, after_hit, lookups, components="adamerging", result="hit") == 2
    assert delta(after_miss, after_hit, lookups, components="adamerging", result="miss") == 0
    assert delta(after_hit, after, lookups, components="adamerging", result="pinned") == 1
    assert delta(before, after, "react_requests_total", model="fashion", protocol="grpc", source="parameter") == 3
    assert delta(before, after, "react_requests_total", model="fashion", protocol="http", source="preset") == 1
    for stage in ("backbone", "correction", "heads", "total"):
        assert delta(before, after, "react_request_duration_seconds_count", model="fashion", stage=stage) == 4, stage
        assert metric(after, "react_request_duration_seconds_bucket", model="fashion", stage=stage, le="+Inf") > 0
    assert delta(before, after, "react_corrected_rows_total", model="fashion") == 4
    values = {v for _, labels, _ in after for v in labels.values()}
    assert pref not in values
    assert not [v for v in values if "=" in v], "a label value looks like a preference"


# ---------------------------------------------------------------- parameters of other models


def _echo_parameters(clients, protocol, parameters, headers=None):
    x = np.zeros((1, 4), np.float32)
    module = grpcclient if isinstance(clients[protocol], grpcclient.InferenceServerClient) else httpclient
    inp = module.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(x)
    raw = clients[protocol].infer("echo_parameters", [inp], parameters=parameters, headers=headers)
    return json.loads(raw.as_numpy("PARAMETERS")[0])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_pass_through_parameters_are_relayed_untouched(clients, protocol):
    """A request for a model the sidecar does not control is relayed with
    its parameters untouched, react-* ones included (docs/contracts.md: a
    Triton ensemble running a react backend reads them there); the
    echo_parameters model shows what its backend received, the same as
    from Triton itself. (react-* headers are stripped: test_sidecar_ops.py,
    where Triton forwards headers to backends.)"""
    params = {"react-preference": "fashion=1", "REACT-Upper": "x", "keep": "y", "n": 3, "flag": True}
    triton = {"grpc": "triton", "http": "triton_http"}[protocol]
    assert _echo_parameters(clients, protocol, params) == _echo_parameters(clients, triton, params) == params
