"""Experiments in the react backend (docs/backend.md, "Experiments"), end to
end on a Triton of its own with the official tritonclient.

A react model over the zoo's components file runs the experiment
fashion-ab (arms merged: none, react: fashion=1, uniform: a preset; traffic
0.8; the default greek=1 for the keys outside it), its key in the request
parameter user_id or the forwarded header x-user-id:

- for 50 keys sent at once (so that Triton's dynamic batcher puts requests
  of different arms in one execution), each request's react-arm response
  parameter is `bin/calibrate experiment assign`'s arm for its key (none
  for the keys outside the traffic share), and its output is its arm's
  W_p · z (W_p from `bin/calibrate solve`, the product in float64 in
  numpy), or the default's;
- an integer key, and a key in a forwarded header (which beats the
  parameter), get the arm of their decimal or header value;
- a request that names its own preference or preset gets it and no arm,
  and one without a key gets one of the arms;
- Triton's metrics endpoint shows the sidecar's counters,
  react_experiment_requests_total{model,experiment,arm,assignment},
  react_experiment_overrides_total and react_experiment_excluded_total,
  with exactly the requests this module sent.
"""

import collections
import subprocess
import threading

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from sidecar_helpers import D, Triton, assert_close, metric, scrape, small_repo, solve_wp
from testenv import ROOT, ZOO, binary, need

MODEL = "react_exp"
EXPERIMENT = "fashion-ab"
ARMS = "merged=50,react=30,uniform=20"
TRAFFIC = 0.8
DEFAULT = "greek=1"
UNIFORM = "fashion=1,mnist=1,digits=1,letters=1,greek=1,fontdigits=1"
# What each arm applies, written out here ("-": outside the traffic share,
# the default), and the canonical form the model echoes.
ARM_SPEC = {"merged": None, "react": "fashion=1", "uniform": UNIFORM, "-": DEFAULT}
ARM_CANONICAL = {"merged": "none", "react": "fashion=1", "-": DEFAULT,
                 "uniform": "fashion=0.166667,mnist=0.166667,digits=0.166667,letters=0.166667,greek=0.166666,fontdigits=0.166666"}

CONFIG = f"""name: "{MODEL}"
backend: "react"
max_batch_size: 64
input [ {{ name: "feature", data_type: TYPE_FP32, dims: [ {D} ] }} ]
output [ {{ name: "corrected", data_type: TYPE_FP32, dims: [ {D} ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 200000 }}
instance_group [ {{ kind: KIND_CPU, count: 1 }} ]
parameters {{ key: "components", value: {{ string_value: "../../../zoo/components.safetensors" }} }}
parameters {{ key: "default_preference", value: {{ string_value: "{DEFAULT}" }} }}
parameters {{ key: "preset.uniform", value: {{ string_value: "{UNIFORM}" }} }}
parameters {{ key: "experiment.name", value: {{ string_value: "{EXPERIMENT}" }} }}
parameters {{ key: "experiment.arms", value: {{ string_value: "{ARMS}" }} }}
parameters {{ key: "experiment.arm.merged.preference", value: {{ string_value: "none" }} }}
parameters {{ key: "experiment.arm.react.preference", value: {{ string_value: "fashion=1" }} }}
parameters {{ key: "experiment.arm.uniform.preset", value: {{ string_value: "uniform" }} }}
parameters {{ key: "experiment.traffic", value: {{ string_value: "{TRAFFIC}" }} }}
parameters {{ key: "experiment.key.header", value: {{ string_value: "x-user-id" }} }}
parameters {{ key: "experiment.key.parameter", value: {{ string_value: "user_id" }} }}
"""

# What this module sent, as the metrics must count it: (metric, arm, assignment).
SENT = collections.Counter()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Triton of its own serving only the experiment's react model, with
    x-user-id forwarded as a request parameter."""
    need((ZOO / "components.safetensors").is_file(), "the zoo's components file is missing (make zoo)")
    binary("calibrate")  # make build, with the react backend, when the sources are newer
    need((ROOT / "bin" / "backends" / "react" / "libtriton_react.so").is_file(), "no react backend: run make build")
    root = tmp_path_factory.mktemp("backend-experiment")
    repo = small_repo(root, models=())
    (repo / MODEL / "1").mkdir(parents=True)
    (repo / MODEL / "config.pbtxt").write_text(CONFIG)
    triton = Triton(repo, root, extra=["--grpc-header-forward-pattern=x-user-id",
                                       "--http-header-forward-pattern=x-user-id"]).start()
    try:
        yield triton
    finally:
        triton.down()


@pytest.fixture(scope="module")
def grpc(server):
    c = grpcclient.InferenceServerClient(server.grpc)
    yield c
    c.close()


def calibrate_assign(keys):
    """Each key's arm as `calibrate experiment assign` prints it ("-":
    outside the traffic share), for the model's experiment."""
    run = subprocess.run([str(binary("calibrate")), "experiment", "assign", "--name", EXPERIMENT, "--arms", ARMS,
                          "--traffic", str(TRAFFIC)], input="".join(k + "\n" for k in keys),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    assert [r[0] for r in rows] == keys, run.stdout[-500:]
    return [r[1] for r in rows]


def want_output(arm, z):
    """The arm's correction of z, in float64: W_p from calibrate solve."""
    spec = ARM_SPEC[arm]
    if spec is None:
        return z.astype(np.float64)
    return z.astype(np.float64) @ solve_wp(str(ZOO / "components.safetensors"), spec).astype(np.float64).T


def grpc_input(z):
    inp = grpcclient.InferInput("feature", list(z.shape), "FP32")
    inp.set_data_from_numpy(z)
    return inp


def echoed(result):
    """(react-preference, react-arm or None) of a gRPC result."""
    params = result.get_response().parameters
    arm = params["react-arm"].string_param if "react-arm" in params else None
    return params["react-preference"].string_param, arm


def count(arm, assignment):
    """Records a request this module sent, as the metrics count it."""
    if assignment == "override":
        SENT[("react_experiment_overrides_total", "", "")] += 1
    elif arm == "-":
        SENT[("react_experiment_excluded_total", "", "")] += 1
    else:
        SENT[("react_experiment_requests_total", arm, assignment)] += 1


def test_arms_equal_calibrate_assign(server, grpc):
    keys = [f"user-{i}" for i in range(45)] + ["Ünïcødé-ключ", "0", "42", "alice@example.com", " spaced "]
    arms = calibrate_assign(keys)
    assert {"merged", "react", "uniform", "-"} <= set(arms), arms  # every arm, and keys outside the share
    rng = np.random.default_rng(11)
    zs = [rng.standard_normal((1 + i % 3, D)).astype(np.float32) for i in range(len(keys))]
    results, done = [None] * len(keys), threading.Semaphore(0)

    def callback(i):
        def cb(result, error):
            results[i] = (result, error)
            done.release()
        return cb

    before = grpc.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
    for i, (key, z) in enumerate(zip(keys, zs)):
        grpc.async_infer(MODEL, [grpc_input(z)], callback(i), parameters={"user_id": key})
    for _ in keys:
        assert done.acquire(timeout=60)
    got = collections.Counter()
    for key, arm, z, (result, error) in zip(keys, arms, zs, results):
        assert error is None, error
        preference, echo = echoed(result)
        assert (echo or "-") == arm, f"key {key!r}: react-arm {echo}, calibrate experiment assign says {arm}"
        assert preference == ARM_CANONICAL[arm], (key, preference)
        assert_close(result.as_numpy("corrected"), want_output(arm, z), rel=1e-5, what=f"key {key!r} (arm {arm})")
        got[arm] += 1
        count(arm, "key")
    after = grpc.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
    executions = int(after.get("execution_count", 0)) - int(before.get("execution_count", 0))
    # The batcher put requests of several arms in one execution.
    assert executions < len(keys) // 2, f"{executions} executions for {len(keys)} requests: not batched"
    print(f"50 keys: arms {dict(got)}, {executions} executions")


def test_integer_and_header_keys(server, grpc):
    http = httpclient.InferenceServerClient(server.http)
    try:
        keys = ["12345", "header-key-1", "header-key-2", "user-3"]
        arms = dict(zip(keys, calibrate_assign(keys)))
        z = np.random.default_rng(2).standard_normal((2, D)).astype(np.float32)
        cases = [  # (client, parameters, headers, the key that decides)
            ("grpc", {"user_id": 12345}, None, "12345"),
            ("http", {"user_id": 12345}, None, "12345"),
            ("grpc", None, {"x-user-id": "header-key-1"}, "header-key-1"),
            ("http", None, {"X-User-Id": "header-key-2"}, "header-key-2"),
            ("http", {"user_id": "user-3"}, {"x-user-id": "header-key-1"}, "header-key-1"),  # the header first
        ]
        for protocol, parameters, headers, key in cases:
            if protocol == "grpc":
                result = grpc.infer(MODEL, [grpc_input(z)], parameters=parameters, headers=headers)
                preference, echo = echoed(result)
            else:
                inp = httpclient.InferInput("feature", list(z.shape), "FP32")
                inp.set_data_from_numpy(z)
                result = http.infer(MODEL, [inp], parameters=parameters, headers=headers)
                params = result.get_response().get("parameters", {})
                preference, echo = params.get("react-preference"), params.get("react-arm")
            arm = arms[key]
            assert (echo or "-") == arm, (protocol, parameters, headers, echo, arm)
            assert preference == ARM_CANONICAL[arm]
            assert_close(result.as_numpy("corrected"), want_output(arm, z), rel=1e-5, what=f"{protocol} {key}")
            count(arm, "key")
    finally:
        http.close()


def test_overrides_and_keyless_requests(server, grpc):
    z = np.random.default_rng(3).standard_normal((2, D)).astype(np.float32)
    for parameters, want in [({"user_id": "user-1", "react-preference": "mnist=1"}, "mnist=1"),
                             ({"user_id": "user-2", "react-preset": "uniform"}, "uniform")]:
        result = grpc.infer(MODEL, [grpc_input(z)], parameters=parameters)
        preference, echo = echoed(result)
        assert echo is None, f"an override echoes react-arm {echo}"
        assert preference == ARM_CANONICAL.get(want, want)
        spec = UNIFORM if want == "uniform" else want
        assert_close(result.as_numpy("corrected"), z.astype(np.float64) @ solve_wp(str(ZOO / "components.safetensors"), spec).astype(np.float64).T,
                     rel=1e-5, what=str(parameters))
        count(None, "override")
    seen = collections.Counter()
    for _ in range(20):
        result = grpc.infer(MODEL, [grpc_input(z)])
        preference, echo = echoed(result)
        arm = echo or "-"  # a random traffic hash may fall outside the share
        assert preference == ARM_CANONICAL[arm], (echo, preference)
        assert_close(result.as_numpy("corrected"), want_output(arm, z), rel=1e-5, what=f"keyless, arm {arm}")
        seen[arm] += 1
        count(arm, "random")
    assert len(seen) >= 2, f"20 keyless requests all got {seen}"


def test_metrics_count_what_was_sent(server):
    assert SENT, "run with the other tests of the module"
    samples = scrape(f"127.0.0.1:{server.ports[2]}")
    got = collections.Counter()
    for name, labels, value in samples:
        if not name.startswith("react_experiment_"):
            continue
        assert labels.get("model") == MODEL and labels.get("experiment") == EXPERIMENT, (name, labels)
        if value:
            got[(name, labels.get("arm", ""), labels.get("assignment", ""))] += int(value)
    assert got == SENT, f"metrics {dict(got)}\nsent    {dict(SENT)}"
    assert metric(samples, "react_experiment_request_errors_total") == 0
    print("metrics:", {"/".join(filter(None, k)): v for k, v in sorted(got.items())})
