"""The real Triton that scripts/test.sh starts, checked with the official
tritonclient gRPC and HTTP clients against triton/testdata/repo.

scripts/test.sh exports TRITON_GRPC_ADDR, TRITON_HTTP_ADDR and
TRITON_METRICS_ADDR (host:port), and SIDECAR_GRPC_ADDR and SIDECAR_HTTP_ADDR,
the sidecar it runs in front of that Triton. Every test that talks to the
server runs twice: against Triton itself, then through the sidecar, which
must answer the same. Without the addresses these tests skip, or fail when
REACT_E2E=1.
"""

import json
import pathlib
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from testenv import ROOT, env

TRITON_VERSION = "2.51.0"
AFFINE = {"affine_fp32": ("FP32", np.float32), "affine_fp16": ("FP16", np.float16)}
MODELS = [*AFFINE, "identity_bf16", "runtime_info", "echo_parameters"]
PROTOCOLS = ["grpc", "http"]
# The servers the tests talk to, with the variables holding their addresses.
TARGETS = {"triton": ("TRITON_GRPC_ADDR", "TRITON_HTTP_ADDR"), "sidecar": ("SIDECAR_GRPC_ADDR", "SIDECAR_HTTP_ADDR")}


@pytest.fixture(scope="module", params=list(TARGETS))
def target(request):
    """The gRPC and HTTP addresses of Triton, or of the sidecar in front of it."""
    grpc_var, http_var = TARGETS[request.param]
    return {"grpc": env(grpc_var), "http": env(http_var)}


@pytest.fixture(scope="module")
def clients(target):
    grpc = grpcclient.InferenceServerClient(url=target["grpc"])
    http = httpclient.InferenceServerClient(url=target["http"])
    yield {"grpc": grpc, "http": http}
    grpc.close()
    http.close()


def _module(protocol):
    return grpcclient if protocol == "grpc" else httpclient


def _affine_expected(x, dtype):
    return (x.astype(dtype) * dtype(2) + dtype(1)).astype(dtype)


def _affine_inputs():
    """triton/testdata/affine_inputs.json: the inputs this harness and the Go
    integration test (triton/integration_test.go) both send to the affine
    models, so both clients are seen to get the same numbers."""
    with open(ROOT / "triton" / "testdata" / "affine_inputs.json") as f:
        fixture = json.load(f)
    shape = tuple(fixture["shape"])
    return {
        "affine_fp32": np.array(fixture["fp32"], dtype=np.float64).astype(np.float32).reshape(shape),
        "affine_fp16": np.array(fixture["fp16"], dtype=np.float64).astype(np.float16).reshape(shape),
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_live_and_ready(clients, protocol):
    client = clients[protocol]
    assert client.is_server_live()
    assert client.is_server_ready()
    for model in MODELS:
        assert client.is_model_ready(model), model


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_server_metadata(clients, protocol):
    metadata = clients[protocol].get_server_metadata(**({"as_json": True} if protocol == "grpc" else {}))
    print(f"{protocol}: server {metadata['name']} {metadata['version']}")
    assert metadata["name"] == "triton"
    assert metadata["version"] == TRITON_VERSION
    for extension in ("binary_tensor_data", "statistics", "model_repository", "model_configuration", "parameters"):
        assert extension in metadata["extensions"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", list(AFFINE))
def test_affine_metadata_and_config(clients, protocol, model):
    client = clients[protocol]
    datatype = AFFINE[model][0]
    kwargs = {"as_json": True} if protocol == "grpc" else {}
    metadata = client.get_model_metadata(model, **kwargs)
    assert metadata["name"] == model
    assert metadata["platform"] == "python"
    assert metadata["versions"] == ["1"]
    for tensors, name in ((metadata["inputs"], "INPUT0"), (metadata["outputs"], "OUTPUT0")):
        assert len(tensors) == 1
        assert tensors[0]["name"] == name
        assert tensors[0]["datatype"] == datatype
        # gRPC's JSON mapping writes int64 as strings.
        assert [int(d) for d in tensors[0]["shape"]] == [-1, 4]

    config = client.get_model_config(model, **kwargs)
    config = config.get("config", config)
    assert config["backend"] == "python"
    assert int(config.get("max_batch_size", 0)) == 0
    assert config["instance_group"][0]["kind"] == "KIND_CPU"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", list(AFFINE))
@pytest.mark.parametrize("rows", [1, 3])
def test_affine_infer(clients, protocol, model, rows):
    datatype, dtype = AFFINE[model]
    x = np.random.default_rng(rows).uniform(-100, 100, size=(rows, 4)).astype(dtype)
    module = _module(protocol)
    inp = module.InferInput("INPUT0", list(x.shape), datatype)
    inp.set_data_from_numpy(x)
    result = clients[protocol].infer(model, [inp], outputs=[module.InferRequestedOutput("OUTPUT0")])
    y = result.as_numpy("OUTPUT0")
    assert y.dtype == dtype
    assert y.shape == (rows, 4)
    np.testing.assert_array_equal(y, _affine_expected(x, dtype))


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_grpc_infer(clients, algorithm):
    """tritonclient can compress gRPC messages; Triton accepts gzip and
    deflate, and so must the sidecar, which decodes messages to relay them."""
    x = np.random.default_rng(7).uniform(-100, 100, size=(3, 4)).astype(np.float32)
    inp = grpcclient.InferInput("INPUT0", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = clients["grpc"].infer("affine_fp32", [inp], compression_algorithm=algorithm)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), _affine_expected(x, np.float32))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", list(AFFINE))
def test_affine_shared_inputs(clients, protocol, model):
    """The inputs of triton/testdata/affine_inputs.json, which the Go
    integration test sends too, give 2x+1 computed here independently."""
    datatype, dtype = AFFINE[model]
    x = _affine_inputs()[model]
    if dtype == np.float16:
        # The fixture promises values whose 2x+1 is exact in float16 too.
        wide = x.astype(np.float64)
        assert np.array_equal((2 * wide + 1).astype(np.float16).astype(np.float64), 2 * wide + 1)
    module = _module(protocol)
    inp = module.InferInput("INPUT0", list(x.shape), datatype)
    inp.set_data_from_numpy(x)
    result = clients[protocol].infer(model, [inp], outputs=[module.InferRequestedOutput("OUTPUT0")])
    y = result.as_numpy("OUTPUT0")
    assert y.dtype == dtype and y.shape == x.shape
    # 2x is exact and +1 rounds once, in the input's precision.
    np.testing.assert_array_equal(y, (x * dtype(2) + dtype(1)).astype(dtype))


def test_affine_fp32_http_json(clients):
    """The HTTP/JSON encoding (no binary extension) both ways."""
    x = np.array([[0.5, -1.25, 3.0, 1e3]], dtype=np.float32)
    inp = httpclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(x, binary_data=False)
    out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)
    result = clients["http"].infer("affine_fp32", [inp], outputs=[out])
    assert "binary_data_size" not in result.get_output("OUTPUT0").get("parameters", {})
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * x + 1)


def test_grpc_typed_contents_answered_raw(target):
    """A request with typed `contents` is accepted, and the answer comes back in
    raw_output_contents (Triton's gRPC server never fills typed contents)."""
    import grpc

    x = [1.0, 2.0, -3.5, 0.25, 4.0, 5.0, 6.0, 7.0]
    request = service_pb2.ModelInferRequest(model_name="affine_fp32")
    tensor = request.inputs.add(name="INPUT0", datatype="FP32", shape=[2, 4])
    tensor.contents.fp32_contents.extend(x)
    with grpc.insecure_channel(target["grpc"]) as channel:
        response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
    assert len(response.outputs) == 1 and response.outputs[0].name == "OUTPUT0"
    assert list(response.outputs[0].shape) == [2, 4]
    assert not response.outputs[0].contents.fp32_contents
    y = np.frombuffer(response.raw_output_contents[0], dtype="<f4")
    np.testing.assert_array_equal(y, 2 * np.array(x, dtype=np.float32) + 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_identity_bf16(clients, protocol):
    # Values exact in bfloat16 (8 significant bits), so the client's
    # float32 -> bf16 truncation loses nothing.
    x = np.array([[1.0, -2.0, 0.15625, 3072.0], [0.0, -0.5, 255.0, 1.5e-3]], dtype=np.float32)
    x = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    module = _module(protocol)
    inp = module.InferInput("INPUT0", list(x.shape), "BF16")
    inp.set_data_from_numpy(x)
    result = clients[protocol].infer("identity_bf16", [inp])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_models_run_in_project_venv(clients, protocol):
    """The Python backend runs the models with the venv's Python and packages."""
    import onnxruntime
    import safetensors

    names = np.array([b"sys.prefix", b"numpy", b"onnxruntime", b"safetensors"], dtype=np.object_)
    module = _module(protocol)
    inp = module.InferInput("NAME", [len(names)], "BYTES")
    inp.set_data_from_numpy(names)
    values = [v.decode() for v in clients[protocol].infer("runtime_info", [inp]).as_numpy("VALUE")]
    prefix, numpy_info, ort_info, st_info = values
    venv = ROOT / ".venv"
    assert pathlib.Path(prefix).resolve() == venv.resolve()
    for info, module_version in ((numpy_info, np.__version__), (ort_info, onnxruntime.__version__), (st_info, safetensors.__version__)):
        version, path = info.split(" ", 1)
        assert version == module_version, info
        assert pathlib.Path(path).resolve().is_relative_to(venv.resolve()), info


def test_grpc_request_parameters_reach_backend(target):
    """Custom parameters reach the backend; the ones Triton consumes
    (sequence_*, priority, timeout) do not; other triton_* keys are refused."""
    import grpc

    def call(params):
        request = service_pb2.ModelInferRequest(model_name="echo_parameters")
        request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 4])
        request.raw_input_contents.append(np.zeros((1, 4), dtype="<f4").tobytes())
        for key, value in params.items():
            if isinstance(value, bool):
                request.parameters[key].bool_param = value
            elif isinstance(value, int):
                request.parameters[key].int64_param = value
            else:
                request.parameters[key].string_param = value
        with grpc.insecure_channel(target["grpc"]) as channel:
            response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
        raw = response.raw_output_contents[0]  # BYTES: 4-byte little-endian length, then the bytes
        return json.loads(raw[4 : 4 + int.from_bytes(raw[:4], "little")])

    seen = call({"pref": "fast", "n": 7, "flag": True, "sequence_id": 5, "priority": 1, "timeout": 10**6})
    assert seen == {"pref": "fast", "n": 7, "flag": True}
    with pytest.raises(grpc.RpcError) as err:
        call({"triton_foo": "x"})
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrong_shape_is_invalid_argument(clients, protocol):
    module = _module(protocol)
    inp = module.InferInput("INPUT0", [1, 3], "FP32")
    inp.set_data_from_numpy(np.zeros((1, 3), dtype=np.float32))
    with pytest.raises(InferenceServerException) as err:
        clients[protocol].infer("affine_fp32", [inp])
    if protocol == "grpc":
        assert err.value.status() == "StatusCode.INVALID_ARGUMENT"
    else:
        assert err.value.status() == "400"


def test_metrics_and_statistics(clients):
    inp = httpclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(np.ones((1, 4), dtype=np.float32))
    clients["http"].infer("affine_fp32", [inp])
    with urllib.request.urlopen(f"http://{env('TRITON_METRICS_ADDR')}/metrics", timeout=10) as response:
        text = response.read().decode()
    success = [line for line in text.splitlines() if line.startswith('nv_inference_request_success{model="affine_fp32"')]
    assert success and float(success[0].rsplit(" ", 1)[1]) > 0
    stats = clients["http"].get_inference_statistics("affine_fp32")["model_stats"][0]
    assert stats["name"] == "affine_fp32"
    assert int(stats["inference_stats"]["success"]["count"]) > 0
