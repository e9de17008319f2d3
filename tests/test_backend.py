"""The react Triton backend (bin/backends/react/libtriton_react.so) inside
the real Triton, called with the official tritonclient.

With the Triton of scripts/test.sh (which serves tritonmodels/repo with the
react backend built by make build, and forwards react-* headers as request
parameters):
- each <task>_react ensemble (backbone -> react -> head) answers
  head(W_p · backbone(x)), computed independently: the backbone and the head
  called directly, W_p from `calibrate solve`, the product in float64; with
  the preference as a request parameter and as a forwarded header, over gRPC
  and HTTP, for FP32 and FP16 features;
- without a preference the ensemble answers exactly what the plain ensemble
  does (the react step is the identity);
- a preset gives its preference's W_p, and a bad preference is refused with
  INVALID_ARGUMENT naming the problem;
- react-preference and react-preset match regardless of case, as parameters
  and as forwarded HTTP headers, and a header that contradicts a parameter
  is refused with INVALID_ARGUMENT.

With a Triton of its own (loading and unloading models makes Triton's strict
readiness false, which the shared server must not be):
- a batch that mixes two preferences, no preference and an invalid one gives
  each request its own answer or its own error, with the dynamic batcher
  forced to batch them (checked in Triton's statistics, with four successes
  and one failure per request);
- a corrupt components file fails the model's load with our message, as
  INVALID_ARGUMENT, and the server and the other models keep serving;
- 60 load/unload cycles with requests in between leave the server's resident
  memory flat.
"""

import json
import threading

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from sidecar_helpers import (D, FEATURE, IMAGE, LOGITS, TASKS, Triton, assert_close, grpc_infer, images, small_repo,
                             solve_wp)
from testenv import ZOO, env

COMPONENTS = ZOO / "components.safetensors"
REACT = "react_adamerging"
UNIFORM = "fashion=1,mnist=1,digits=1,letters=1,greek=1,fontdigits=1"


@pytest.fixture(scope="module")
def triton():
    """gRPC and HTTP clients of the shared Triton of scripts/test.sh."""
    c = {"grpc": grpcclient.InferenceServerClient(env("TRITON_GRPC_ADDR")),
         "http": httpclient.InferenceServerClient(env("TRITON_HTTP_ADDR"))}
    yield c
    for client in c.values():
        client.close()


def _call(client, model, x, parameters=None, headers=None, name=IMAGE, output=LOGITS):
    module = grpcclient if isinstance(client, grpcclient.InferenceServerClient) else httpclient
    datatype = {np.float32: "FP32", np.float16: "FP16"}[x.dtype.type]
    inp = module.InferInput(name, list(x.shape), datatype)
    inp.set_data_from_numpy(x)
    result = client.infer(model, [inp], parameters=dict(parameters) if parameters else None,
                          headers=dict(headers) if headers else None)
    return result, result.as_numpy(output)


def _reference(triton, x, preference, fp16=False, task="fashion"):
    """head_task(W_p · backbone(x)) with every model called directly; in FP16
    the feature comes from the FP16 backbone and goes to the FP16 head
    rounded to FP16, as the react step hands it on."""
    backbone = "backbone_adamerging_fp16" if fp16 else "backbone_adamerging"
    head = f"head_{task}_fp16" if fp16 else f"head_{task}"
    z = grpc_infer(triton, backbone, {IMAGE: x}, [FEATURE]).as_numpy(FEATURE).astype(np.float64)
    if preference is not None:
        z = z @ solve_wp(str(COMPONENTS), preference).astype(np.float64).T
    z = z.astype(np.float16 if fp16 else np.float32)
    return grpc_infer(triton, head, {FEATURE: z}, [LOGITS]).as_numpy(LOGITS)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize("where", ["parameter", "header"])
@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_react_ensemble_equals_independent_computation(triton, protocol, where, fp16):
    x = images("fashion", 6, seed=3)
    pref = "fashion=0.6,mnist=0.4"
    kwargs = {"parameters": {"react-preference": pref}} if where == "parameter" else {"headers": {"react-preference": pref}}
    _, got = _call(triton[protocol], "fashion_fp16_react" if fp16 else "fashion_react", x, **kwargs)
    want = _reference(triton["grpc"], x, pref, fp16)
    # FP16: the step rounds its float32 result to FP16, the reference its
    # float64 one; they may differ by one FP16 unit in a few elements.
    assert_close(got, want, rel=2e-3 if fp16 else 1e-5)
    plain = _reference(triton["grpc"], x, None, fp16)
    assert np.abs(got - plain).max() > 1e-2, "the preference changed nothing: no correction was applied"


@pytest.mark.parametrize("task", TASKS)
def test_without_preference_the_step_is_the_identity(triton, task):
    x = images(task, 5, seed=1)
    _, plain = _call(triton["grpc"], task, x)
    _, react = _call(triton["grpc"], f"{task}_react", x)
    np.testing.assert_array_equal(react, plain)


def test_preset_and_none(triton):
    x = images("digits", 4, seed=2)
    _, got = _call(triton["http"], "digits_react", x, parameters={"react-preset": "uniform"})
    assert_close(got, _reference(triton["grpc"], x, UNIFORM, task="digits"), rel=1e-5)
    z = grpc_infer(triton["grpc"], "backbone_adamerging", {IMAGE: x}, [FEATURE]).as_numpy(FEATURE)
    _, corrected = _call(triton["grpc"], REACT, z, parameters={"react-preset": "uniform"}, name=FEATURE, output="corrected")
    w = solve_wp(str(COMPONENTS), UNIFORM).astype(np.float64)
    assert_close(corrected, z.astype(np.float64) @ w.T, rel=1e-5, what="corrected feature")
    result, same = _call(triton["grpc"], REACT, z, parameters={"react-preference": "none"}, name=FEATURE, output="corrected")
    np.testing.assert_array_equal(same, z)
    assert result.get_response().parameters["react-preference"].string_param == "none"


BAD = [
    ({"react-preference": "fashion=0.5,cars=0.5"}, 'unknown task "cars"'),
    ({"react-preference": "fashion=-1"}, "fashion"),
    ({"react-preset": "nope"}, "nope"),
    ({"react-preference": 3}, "must be a string"),
]


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize("params,needle", BAD, ids=[b[1] for b in BAD])
def test_bad_preference_is_invalid_argument(triton, protocol, params, needle):
    x = images("fashion", 2)
    with pytest.raises(InferenceServerException) as info:
        _call(triton[protocol], "fashion_react", x, parameters=params)
    status = str(info.value.status())
    assert status in ("StatusCode.INVALID_ARGUMENT", "400"), status
    assert needle in info.value.message(), info.value.message()


# (protocols, call arguments, the preference whose W_p applies, or the error's text). Parameter and
# header names match regardless of case; gRPC metadata keys are lower case by definition, so mixed-case
# headers go over HTTP only.
NAMES = [
    (("grpc", "http"), {"parameters": {"React-Preference": "fashion=1"}}, "fashion=1"),
    (("grpc", "http"), {"parameters": {"REACT-PRESET": "uniform"}}, UNIFORM),
    (("grpc", "http"), {"parameters": {"react-preference": "greek=1"}, "headers": {"react-preference": "greek=1"}},
     "greek=1"),
    (("grpc", "http"), {"parameters": {"react-preference": "fashion=1"}, "headers": {"react-preference": "greek=1"}},
     'parameter react-preference given twice, as "fashion=1" and "greek=1"'),
    (("http",), {"headers": {"React-Preference": "mnist=1"}}, "mnist=1"),
    (("http",), {"parameters": {"react-preset": "uniform"}, "headers": {"REACT-PRESET": "other"}}, "given twice"),
]


@pytest.mark.parametrize("protocol,kwargs,want", [(p, kw, want) for protocols, kw, want in NAMES for p in protocols],
                         ids=[f"case{i}-{p}" for i, (protocols, _, _) in enumerate(NAMES) for p in protocols])
def test_keys_ignore_case_and_a_conflicting_header_is_refused(triton, protocol, kwargs, want):
    z = np.random.default_rng(4).standard_normal((3, D)).astype(np.float32)
    if "given twice" in want:
        with pytest.raises(InferenceServerException) as info:
            _call(triton[protocol], REACT, z, name=FEATURE, output="corrected", **kwargs)
        assert str(info.value.status()) in ("StatusCode.INVALID_ARGUMENT", "400"), info.value.status()
        assert want in info.value.message(), info.value.message()
        return
    _, got = _call(triton[protocol], REACT, z, name=FEATURE, output="corrected", **kwargs)
    w = solve_wp(str(COMPONENTS), want).astype(np.float64)
    assert_close(got, z.astype(np.float64) @ w.T, rel=1e-5, what=str(kwargs))


# ---------------------------------------------------------------- a Triton of its own


def _react_config(name, max_batch_size=16, delay_us=0, datatype="TYPE_FP32", components="components.safetensors"):
    """A react model's configuration as Triton's JSON, for a load with
    override files (the components file goes to the version directory)."""
    cfg = {"name": name, "backend": "react", "max_batch_size": max_batch_size,
           "input": [{"name": "feature", "data_type": datatype, "dims": [D]}],
           "output": [{"name": "corrected", "data_type": datatype, "dims": [D]}],
           "instance_group": [{"kind": "KIND_CPU", "count": 1}],
           "parameters": {"components": {"string_value": components},
                          "preset.uniform": {"string_value": UNIFORM}}}
    if delay_us:
        cfg["dynamic_batching"] = {"max_queue_delay_microseconds": delay_us, "preferred_batch_size": [max_batch_size]}
    return json.dumps(cfg)


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A Triton of its own serving only the zoo's react model."""
    env("TRITON_GRPC_ADDR")  # skip (or fail under REACT_E2E=1) outside scripts/test.sh
    root = tmp_path_factory.mktemp("backend")
    server = Triton(small_repo(root, models=(REACT,)), root).start()
    client = grpcclient.InferenceServerClient(server.grpc)
    try:
        yield server, client
    finally:
        client.close()
        server.down()


def test_mixed_batch_gives_each_request_its_own_answer(own):
    server, client = own
    data = COMPONENTS.read_bytes()
    client.load_model("react_batched", config=_react_config("react_batched", delay_us=2_000_000),
                      files={"file:1/components.safetensors": data})
    rng = np.random.default_rng(7)
    # (preference, the error's text or the echoed canonical form)
    cases = [("fashion=1", "fashion=1"), ("digits=1,mnist=1", "mnist=0.5,digits=0.5"), (None, "none"),
             ("fashion=2,bogus=1", 'unknown task "bogus"'), ("fashion=1", "fashion=1")]
    zs = [rng.standard_normal((i + 1, D)).astype(np.float32) for i in range(len(cases))]
    results = _infer_async(client, "react_batched", [pref for pref, _ in cases], zs)
    for (pref, text), z, (result, error) in zip(cases, zs, results):
        if "bogus" in (pref or ""):
            assert error is not None and "INVALID_ARGUMENT" in str(error.status()), error
            assert text in error.message()
            continue
        assert error is None, error
        got = result.as_numpy("corrected")
        if pref is None:
            np.testing.assert_array_equal(got, z)
        else:
            w = solve_wp(str(COMPONENTS), pref).astype(np.float64)
            assert_close(got, z.astype(np.float64) @ w.T, rel=1e-5, what=pref)
        assert result.get_response().parameters["react-preference"].string_param == text
    stats = client.get_inference_statistics("react_batched", as_json=True)["model_stats"][0]
    rows = sum(len(z) for z in zs)
    batches = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in stats["batch_stats"]}
    assert batches == {rows: 1}, f"the five requests were not executed as one batch: {batches}"
    assert int(stats["execution_count"]) == 1
    # Per request: four answers and the bogus preference's failure.
    counts = {k: int(stats["inference_stats"][k]["count"]) for k in ("success", "fail")}
    assert counts == {"success": len(cases) - 1, "fail": 1}, counts
    client.unload_model("react_batched")


def _infer_async(client, model, prefs, zs):
    """Sends one request per feature in zs to model at once, each with its
    react-preference parameter (none when None), so that Triton can batch
    them; returns each one's (result, error) in order."""
    results, done = [None] * len(zs), threading.Semaphore(0)

    def callback(i):
        def cb(result, error):
            results[i] = (result, error)
            done.release()
        return cb

    for i, (pref, z) in enumerate(zip(prefs, zs)):
        inp = grpcclient.InferInput("feature", list(z.shape), "FP32")
        inp.set_data_from_numpy(z)
        client.async_infer(model, [inp], callback(i),
                           parameters={"react-preference": pref} if pref is not None else None)
    for _ in zs:
        assert done.acquire(timeout=60)
    return results


def test_batches_of_changing_size_leave_nothing_behind(own):
    """The instance reuses its per-request state from one execution to the
    next (backend/execute.go): batches of 6, 5, 2, 6, 1 and 6 requests, with
    a request that fails as it is read (an integer react-preference) and one
    that fails in the batch (an unknown task) at places good requests take
    in the next batches, each give every request its own answer (checked
    against W_p from calibrate solve, in float64), its own echoed
    preference, and an error only where its own request is bad."""
    server, client = own
    client.load_model("react_resize", config=_react_config("react_resize", delay_us=500_000),
                      files={"file:1/components.safetensors": COMPONENTS.read_bytes()})
    good = [("fashion=1", "fashion=1"), ("digits=1,mnist=1", "mnist=0.5,digits=0.5"), (None, "none"),
            ("greek=1", "greek=1"), ("letters=3,fashion=1", "fashion=0.25,letters=0.75"), ("mnist=1", "mnist=1")]
    bad = ("fashion=2,bogus=1", 'unknown task "bogus"')
    bad_read = (5, "must be a string")
    rounds = [good, [good[0], good[1], good[2], bad_read, good[4]], [good[3], bad], good, [good[5]],
              [good[3], good[4], good[5], good[0], good[1], bad]]
    wps = {}
    rng = np.random.default_rng(11)
    for n, cases in enumerate(rounds):
        zs = [rng.standard_normal((1, D)).astype(np.float32) for _ in cases]
        results = _infer_async(client, "react_resize", [pref for pref, _ in cases], zs)
        for i, ((pref, text), z, (result, error)) in enumerate(zip(cases, zs, results)):
            what = f"round {n} ({len(cases)} requests), request {i}, {pref}"
            if (pref, text) in (bad, bad_read):
                assert error is not None and "INVALID_ARGUMENT" in str(error.status()), what
                assert text in error.message(), what
                continue
            assert error is None, f"{what}: {error}"
            got = result.as_numpy("corrected")
            if pref is None:
                np.testing.assert_array_equal(got, z, err_msg=what)
            else:
                if pref not in wps:
                    wps[pref] = solve_wp(str(COMPONENTS), pref).astype(np.float64)
                assert_close(got, z.astype(np.float64) @ wps[pref].T, rel=1e-5, what=what)
            assert result.get_response().parameters["react-preference"].string_param == text, what
    stats = client.get_inference_statistics("react_resize", as_json=True)["model_stats"][0]
    batches = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in stats["batch_stats"]}
    # The request that failed as it was read does not count in its batch.
    assert batches == {6: 3, 4: 1, 2: 1, 1: 1}, f"the rounds were not executed as one batch each: {batches}"
    client.unload_model("react_resize")


def test_corrupt_components_fail_the_load_and_nothing_else(own):
    server, client = own
    good = COMPONENTS.read_bytes()
    for name, data, needle in [("react_truncated", good[:1000], "larger than the rest of the file"),
                               ("react_flipped", good[:-8] + bytes(8), "checksum mismatch")]:
        with pytest.raises(InferenceServerException) as info:
            client.load_model(name, config=_react_config(name), files={"file:1/components.safetensors": data})
        message = info.value.message()
        # Triton prefixes the backend's error with its code.
        assert f"Invalid argument: react model {name} version 1: parameters.components:" in message, message
        assert needle in message, message
        assert not client.is_model_ready(name)
    # A configuration error names its parameter.
    with pytest.raises(InferenceServerException) as info:
        cfg = json.loads(_react_config("react_badbeta"))
        cfg["parameters"]["beta"] = {"string_value": "-1"}
        client.load_model("react_badbeta", config=json.dumps(cfg), files={"file:1/components.safetensors": good})
    assert "parameters.beta: invalid beta -1" in info.value.message(), info.value.message()
    # The server lives and the zoo's react model still answers.
    assert client.is_server_live() and client.is_model_ready(REACT)
    z = np.ones((2, D), np.float32)
    _, got = _call(client, REACT, z, parameters={"react-preference": "fashion=1"}, name=FEATURE, output="corrected")
    w = solve_wp(str(COMPONENTS), "fashion=1").astype(np.float64)
    assert_close(got, z.astype(np.float64) @ w.T, rel=1e-5)


def _rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_load_unload_cycles_keep_memory_flat(own):
    server, client = own
    data = COMPONENTS.read_bytes()
    z = np.random.default_rng(1).standard_normal((8, D)).astype(np.float32)
    w = solve_wp(str(COMPONENTS), "greek=1").astype(np.float64)

    def cycle(i):
        client.load_model("react_cycle", config=_react_config("react_cycle"), files={"file:1/components.safetensors": data})
        _, got = _call(client, "react_cycle", z, parameters={"react-preference": "greek=1"}, name=FEATURE, output="corrected")
        assert_close(got, z.astype(np.float64) @ w.T, rel=1e-5, what=f"cycle {i}")
        # A new preference each cycle: a solve and a cache entry to free.
        _call(client, "react_cycle", z, parameters={"react-preference": f"greek=1,letters={i + 1}"}, name=FEATURE,
              output="corrected")
        client.unload_model("react_cycle")

    for i in range(10):  # warm-up: allocator pools, Go heap, Triton's own caches
        cycle(i)
    before = _rss_kib(server.pid())
    for i in range(10, 60):
        cycle(i)
    after = _rss_kib(server.pid())
    # One load holds the 0.6 MB file and its solver; 50 leaked loads would
    # hold tens of MB.
    assert after - before < 12 * 1024, f"resident memory grew by {(after - before) / 1024:.1f} MiB over 50 cycles"
    assert client.is_server_live()


def test_a_new_version_brings_a_new_components_file(own):
    """A new version directory with a new components file, then Triton's
    load call: version 2's W_p serves afterwards (Triton's default version
    policy serves the latest). The components parameter is relative to the
    version directory, so the configuration does not change.

    (A load with override files and an unchanged configuration does not
    reinitialise a loaded model in Triton 2.51: it only logs "Unexpected
    lifecycle state transition". A new version, or a changed configuration,
    does.)"""
    server, client = own
    model = server.repo / "react_versions"
    (model / "1").mkdir(parents=True)
    cfg = json.loads(_react_config("react_versions"))
    (model / "config.pbtxt").write_text(
        'name: "react_versions"\nbackend: "react"\nmax_batch_size: 16\n'
        f'input [ {{ name: "feature", data_type: TYPE_FP32, dims: [ {D} ] }} ]\n'
        f'output [ {{ name: "corrected", data_type: TYPE_FP32, dims: [ {D} ] }} ]\n'
        'instance_group [ { kind: KIND_CPU, count: 1 } ]\n'
        f'parameters {{ key: "components", value: {{ string_value: "{cfg["parameters"]["components"]["string_value"]}" }} }}\n')
    (model / "1" / "components.safetensors").write_bytes(COMPONENTS.read_bytes())
    z = np.random.default_rng(4).standard_normal((3, D)).astype(np.float32)
    spec = "digits=1"
    answers = []
    for version, name in ((1, "components.safetensors"), (2, "components_ta.safetensors")):
        if version == 2:
            (model / "2").mkdir()
            (model / "2" / "components.safetensors").write_bytes((ZOO / name).read_bytes())
        client.load_model("react_versions")
        assert client.is_model_ready("react_versions", str(version))
        _, got = _call(client, "react_versions", z, parameters={"react-preference": spec}, name=FEATURE, output="corrected")
        w = solve_wp(str(ZOO / name), spec).astype(np.float64)
        assert_close(got, z.astype(np.float64) @ w.T, rel=1e-5, what=f"version {version}")
        answers.append(got)
    assert np.abs(answers[0] - answers[1]).max() > 1e-3
    assert not client.is_model_ready("react_versions", "1")
    client.unload_model("react_versions")
