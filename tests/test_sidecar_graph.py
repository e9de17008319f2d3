"""End to end: the sidecar as a drop-in in front of a user's own ensembles
(issue 27), with the real Triton, the official tritonclient and
perf_analyzer.

The test generates a model repository with conventions unlike the zoo's
(tests/graph_repo.py): other input and output names, a UINT8 image input, a
pre-processing step before a two-input backbone, an FP16 embedding, two
heads each followed by post-processing (softmax with top-k; a BYTES label
lookup), a max_batch_size 0 variant, an ensemble shadowed in the explicit
form with renamed inputs and outputs, and a backend-mode ensemble with our
react step. It calibrates a components file from embeddings computed in
numpy, starts its own Triton and a sidecar in front of it, and checks that

- metadata, configuration and readiness through the sidecar are Triton's
  (for the explicit form, its configuration adds the documented react.*
  parameters);
- the same client code, unchanged, run against Triton and against the
  sidecar over gRPC, HTTP binary and HTTP JSON, gets byte-identical outputs
  when it sends no preference (post-processing outputs and the
  classification extension included), and, with a preference, the graph
  computed here in numpy with W_p from `calibrate solve` applied to the
  embedding;
- perf_analyzer runs against a shadowed ensemble;
- a react-preference header sent through the sidecar reaches the react
  step of a backend-mode ensemble;
- start-up refuses a model whose signature differs from the ensemble it
  shadows, a backbone other than the calibrated one, and a tensor the
  ensemble lacks, listing the problems.
"""

import csv
import subprocess
import types

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import graph_math as gm  # tests/graph_models/graph_math.py
import graph_repo
from sidecar_helpers import Sidecar, Triton, config_text
from testenv import PERF_ANALYZER, ROOT, binary, missing

PREF = "a=0.3,b=0.7"
PROTOCOLS = ["grpc", "http-binary", "http-json"]
GRAPHS = ["pet_classifier", "pet_classifier_nb"]
OUTPUTS = {"pet_classifier": ["probs_a", "top_a", "scores_b", "label_b"], "pet_scores": ["scores"]}
OUTPUTS["pet_classifier_nb"] = OUTPUTS["pet_classifier"]
# The corrected embedding travels as FP16, whose rounding (2^-11 relative)
# may fall either side between W_p in float32 (the sidecar) and in float64
# (here); the scores of the heads move by about that much.
RTOL = 4e-3


def _config(triton, comps, models):
    return {
        "triton": {"grpc": triton.grpc, "http": triton.http, "startup_timeout": "60s"},
        "listen": {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", "metrics": "127.0.0.1:0", "shutdown_timeout": "5s"},
        "components": [{"name": "pets", "path": str(comps), "presets": {"b_first": "a=0.2,b=0.8"}}],
        "models": models,
    }


MODELS = [
    # The graph form: the ensemble and the tensor to correct.
    {"name": "pet_classifier", "correct": "emb"},
    # Its max_batch_size 0 twin runs enc_nb, a copy of the calibrated enc.
    {"name": "pet_classifier_nb", "correct": "emb", "variant_of": "enc"},
    # The explicit form, renamed to the ensemble's names.
    {"name": "pet_scores", "backbone": {"model": "enc", "output": "embeddings"},
     "inputs": {"pixel_values": "pixels", "region_mask": "mask"},
     "heads": [{"task": "a", "model": "cls_a", "outputs": {"scores_raw": "scores"}}]},
]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The generated repository on a Triton of its own, and the sidecar in
    front of it."""
    if not (ROOT / ".venv" / "bin" / "python").is_file():
        missing("no .venv: run make setup")
    root = tmp_path_factory.mktemp("graph")
    w = gm.weights()
    comps = graph_repo.fit_components(root, w, "enc")
    binary("sidecar")  # builds bin/ (and the react backend) when stale
    graph_repo.write(root / "repo", components=comps)
    triton = Triton(root / "repo", root)
    side = None
    try:
        triton.start()
        path = root / "sidecar.yaml"
        path.write_text(config_text(_config(triton, comps, MODELS)))
        side = Sidecar(path, root).start()
        wp = root / "W.npy"
        run = subprocess.run([str(binary("calibrate")), "solve", "--components", str(comps), "--preference", PREF,
                              "--out", str(wp)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        yield types.SimpleNamespace(triton=triton, side=side, w=w, comps=comps, root=root, wp=np.load(wp))
    finally:
        if side is not None:
            side.stop()
        triton.down()


# ---------------------------------------------------------------- the client


def _inputs(model, rows, seed):
    """The inputs of model: rows samples (one, without a batch dimension,
    for the max_batch_size 0 variant)."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, size=(rows, gm.SIDE, gm.SIDE), dtype=np.uint8)
    mask = rng.integers(0, 2, size=(rows, gm.PIXELS), dtype=np.int64)
    if model == "pet_scores":
        return {"pixels": gm.prep(image), "mask": mask}
    if model.endswith("_nb"):
        return {"image": image[0], "mask": mask[0]}
    return {"image": image, "mask": mask}


def client_infer(address, protocol, model, inputs, outputs=None, headers=None, class_count=0, version=""):
    """The client: the same code whatever the address. Returns the outputs
    by name, and the response's parameters."""
    from tritonclient.utils import np_to_triton_dtype

    grpc = protocol == "grpc"
    lib = grpcclient if grpc else httpclient
    binary_data = protocol != "http-json"
    client = lib.InferenceServerClient(address)
    try:
        tensors = []
        for name, array in inputs.items():
            t = lib.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            if grpc:
                t.set_data_from_numpy(array)
            else:
                t.set_data_from_numpy(array, binary_data=binary_data)
            tensors.append(t)
        requested = None
        if outputs:
            if grpc:
                requested = [lib.InferRequestedOutput(o, class_count=class_count) for o in outputs]
            else:
                requested = [lib.InferRequestedOutput(o, binary_data=binary_data, class_count=class_count) for o in outputs]
        # tritonclient's HTTP client adds to the dict it is given: a new one each call.
        result = client.infer(model, tensors, outputs=requested, headers=dict(headers) if headers else None,
                              model_version=version)
        names = outputs or OUTPUTS[model]
        response = result.get_response()
        params = response.parameters if grpc else response.get("parameters", {})
        return {n: result.as_numpy(n) for n in names}, params
    finally:
        client.close()


def _address(deployment, target, protocol):
    server = deployment.side if target == "sidecar" else deployment.triton
    return server.grpc if protocol == "grpc" else server.http


def _param(params, key):
    p = params.get(key)
    return p if isinstance(p, str) or p is None else p.string_param


# ---------------------------------------------------------------- signature


@pytest.mark.parametrize("model", [*GRAPHS, "pet_scores"])
def test_metadata_config_and_readiness_are_tritons(deployment, model):
    for protocol in ("grpc", "http"):
        lib = grpcclient if protocol == "grpc" else httpclient
        kw = {"as_json": True} if protocol == "grpc" else {}
        direct = lib.InferenceServerClient(_address(deployment, "triton", protocol))
        side = lib.InferenceServerClient(_address(deployment, "sidecar", protocol))
        try:
            assert side.get_model_metadata(model, **kw) == direct.get_model_metadata(model, **kw), (model, protocol)
            assert side.is_model_ready(model) and direct.is_model_ready(model)
            got, want = side.get_model_config(model, **kw), direct.get_model_config(model, **kw)
            if protocol == "grpc":
                got, want = got["config"], want["config"]
            if model != "pet_scores":
                assert got == want, (model, protocol)
                continue
            # The explicit form answers its own configuration (platform
            # react: no ensemble steps), with the ensemble's signature and
            # the documented react.* parameters.
            assert got["platform"] == "react" and got["backend"] == "react", got

            def signature(c):
                return ({k: c.get(k) for k in ("name", "max_batch_size")},
                        [(t["name"], t["data_type"], [int(d) for d in t["dims"]]) for t in c["input"]],
                        [(t["name"], t["data_type"], [int(d) for d in t["dims"]]) for t in c["output"]])
            assert signature(got) == signature(want), (got, want)
            assert got["parameters"]["react.backbone"]["string_value"] == "enc:embeddings"
            assert got["parameters"]["react.tasks"]["string_value"] == "a,b"
        finally:
            side.close()
            direct.close()


# ---------------------------------------------------------------- outputs


def _same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype == np.object_:
        assert got.tolist() == want.tolist(), what
    else:
        assert got.tobytes() == want.tobytes(), what


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", [*GRAPHS, "pet_scores"])
def test_no_preference_is_tritons_byte_for_byte(deployment, model, protocol):
    for seed, outputs, class_count in [(1, None, 0), (2, OUTPUTS[model][::-1][:2], 0), (3, OUTPUTS[model][:1], 2)]:
        x = _inputs(model, 3, seed)
        want, _ = client_infer(_address(deployment, "triton", protocol), protocol, model, x, outputs, class_count=class_count)
        got, params = client_infer(_address(deployment, "sidecar", protocol), protocol, model, x, outputs, class_count=class_count)
        assert set(got) == set(want)
        for name in want:
            _same(got[name], want[name], (model, protocol, seed, name))
        assert _param(params, "react-preference") == "none"
        # "none" named explicitly is the same.
        again, _ = client_infer(_address(deployment, "sidecar", protocol), protocol, model, x, outputs,
                                headers={"react-preference": "none"}, class_count=class_count)
        for name in want:
            _same(again[name], want[name], (model, protocol, seed, name, "none"))


def _reference(deployment, model, x, wp):
    """What the model must answer, computed here: the ensemble's graph in
    numpy with W_p (wp, float32 from calibrate solve; None: no correction)
    applied to the FP16 embedding in float64, the result rounded to FP16."""
    def correct(emb):
        if wp is None:
            return emb
        return (emb.astype(np.float64) @ wp.astype(np.float64).T).astype(np.float16)

    w = deployment.w
    if model == "pet_scores":
        emb = correct(gm.enc(x["pixels"], x["mask"], w))
        return {"scores": gm.head(emb, w, "a")}
    out, _ = gm.graph(x["image"], x["mask"], w, correct)
    return out


def _close(got, want, what):
    scale = max(float(np.abs(want).max()), 1e-6)
    diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    assert diff <= RTOL * scale, f"{what}: max |diff| {diff:.3g} > {RTOL} × {scale:.3g}\n{got}\n{want}"


def _clear(values, rank, margin):
    """Rows (last axis sorted largest first) whose first rank+1 values are
    farther than margin apart: their order cannot flip within tolerance."""
    s = -np.sort(-values.reshape(-1, values.shape[-1]), axis=-1)
    return np.all(s[:, :rank] - s[:, 1:rank + 1] > margin, axis=-1)


def _check_corrected(model, got, want, what):
    if model == "pet_scores":
        _close(got["scores"], want["scores"], what)
        return
    _close(got["probs_a"], want["probs_a"], (what, "probs_a"))
    _close(got["scores_b"], want["scores_b"], (what, "scores_b"))
    assert got["top_a"].dtype == np.int32 and got["top_a"].shape == want["top_a"].shape
    clear = _clear(want["probs_a"], gm.TOP, 2 * RTOL)
    assert np.array_equal(got["top_a"].reshape(-1, gm.TOP)[clear], want["top_a"].reshape(-1, gm.TOP)[clear]), what
    clear = _clear(want["scores_b"], 1, 2 * RTOL * np.abs(want["scores_b"]).max())
    assert got["label_b"].reshape(-1)[clear].tolist() == want["label_b"].reshape(-1)[clear].tolist(), what
    # The post-processing ran on the corrected scores the sidecar returns.
    assert got["label_b"].reshape(-1).tolist() == gm.lookup(got["scores_b"]).reshape(-1).tolist(), what


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", [*GRAPHS, "pet_scores"])
def test_preference_is_the_graph_corrected(deployment, model, protocol):
    rows = 6
    x = _inputs(model, rows, 10)
    got, params = client_infer(_address(deployment, "sidecar", protocol), protocol, model, x,
                               headers={"react-preference": PREF})
    assert _param(params, "react-preference") == PREF
    want = _reference(deployment, model, x, deployment.wp)
    _check_corrected(model, got, want, (model, protocol))
    # The test can tell: the uncorrected graph is far from it.
    plain = _reference(deployment, model, x, None)
    key = "scores" if model == "pet_scores" else "probs_a"
    assert np.abs(plain[key] - want[key]).max() > 20 * RTOL * np.abs(want[key]).max()
    # A preset, as a request parameter over gRPC.
    if protocol == "grpc":
        wp = _solve(deployment, "a=0.2,b=0.8")
        client = grpcclient.InferenceServerClient(deployment.side.grpc)
        try:
            from tritonclient.utils import np_to_triton_dtype
            tensors = []
            for name, array in x.items():
                t = grpcclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
                t.set_data_from_numpy(array)
                tensors.append(t)
            result = client.infer(model, tensors, parameters={"react-preset": "b_first"})
        finally:
            client.close()
        _check_corrected(model, {n: result.as_numpy(n) for n in OUTPUTS[model]}, _reference(deployment, model, x, wp),
                         (model, "preset"))


def _solve(deployment, preference):
    out = deployment.root / f"W-{preference.replace('=', '').replace(',', '-')}.npy"
    run = subprocess.run([str(binary("calibrate")), "solve", "--components", str(deployment.comps), "--preference",
                          preference, "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return np.load(out)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_classification_with_a_preference(deployment, protocol):
    """The classification extension on an output of a post-processing step,
    computed by Triton on the corrected graph: the top-2 of the corrected
    probabilities, in Triton's own format."""
    x = _inputs("pet_classifier", 4, 20)
    got, _ = client_infer(_address(deployment, "sidecar", protocol), protocol, "pet_classifier", x, ["probs_a"],
                          headers={"react-preference": PREF}, class_count=2)
    want = _reference(deployment, "pet_classifier", x, deployment.wp)["probs_a"]
    assert got["probs_a"].shape == (4, 2)
    clear = _clear(want, 2, 2 * RTOL)
    for row, entries in enumerate(got["probs_a"]):
        values = [(e.decode() if isinstance(e, bytes) else e).split(":") for e in entries]
        assert all(len(v) == 2 for v in values), entries
        if clear[row]:
            assert [int(v[1]) for v in values] == list(np.argsort(-want[row], kind="stable")[:2]), (row, entries, want[row])
        for v in values:
            assert abs(float(v[0]) - want[row][int(v[1])]) <= RTOL, (row, entries, want[row])


# ---------------------------------------------------------------- perf_analyzer


def _successes(deployment, model):
    """The success count of model's statistics, through the sidecar."""
    client = grpcclient.InferenceServerClient(deployment.side.grpc)
    try:
        [s] = client.get_inference_statistics(model, as_json=True)["model_stats"]
    finally:
        client.close()
    assert s["version"] == "1", s
    return int(s["inference_stats"]["success"].get("count", 0))


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_perf_analyzer_on_a_shadowed_ensemble(deployment, tmp_path, protocol):
    if not PERF_ANALYZER.is_file():
        missing(f"no {PERF_ANALYZER}")
    before = _successes(deployment, "pet_classifier")
    report = tmp_path / "perf.csv"
    addr = deployment.side.grpc if protocol == "grpc" else deployment.side.http
    args = [str(PERF_ANALYZER), "-m", "pet_classifier", "-u", addr, "-i", protocol, "-b", "2",
            "--concurrency-range", "2:2", "-p", "1000", "--measurement-mode", "count_windows",
            "--measurement-request-count", "20", "-s", "1000", "-r", "10", "-f", str(report)]
    if protocol == "grpc":
        args += ["--request-parameter", f"react-preference:{PREF}:string"]
    else:
        args += ["-H", f"react-preference:{PREF}"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(report) as f:
        [row] = list(csv.DictReader(f))
    assert float(row["Inferences/Second"]) > 0, row
    # The statistics it read are the sidecar's: its corrected requests.
    assert _successes(deployment, "pet_classifier") - before >= 20


# ---------------------------------------------------------------- backend mode


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_header_reaches_a_backend_mode_ensemble(deployment, protocol):
    """pet_react runs the react backend between enc and cls_a; the sidecar
    turns the react-preference header into the request parameter the react
    step reads. Sent to Triton directly (which forwards no header), the
    header does nothing."""
    x = _inputs("pet_classifier", 4, 30)
    want = _reference(deployment, "pet_classifier", x, deployment.wp)
    plain = _reference(deployment, "pet_classifier", x, None)
    outputs = ["probs_a", "top_a"]
    got, _ = client_infer(_address(deployment, "sidecar", protocol), protocol, "pet_react", x, outputs,
                          headers={"react-preference": PREF})
    _close(got["probs_a"], want["probs_a"], (protocol, "through the sidecar"))
    direct, _ = client_infer(_address(deployment, "triton", protocol), protocol, "pet_react", x, outputs,
                             headers={"react-preference": PREF})
    _close(direct["probs_a"], plain["probs_a"], (protocol, "directly"))
    none, _ = client_infer(_address(deployment, "sidecar", protocol), protocol, "pet_react", x, outputs)
    _close(none["probs_a"], plain["probs_a"], (protocol, "no header"))


# ---------------------------------------------------------------- start-up


def _refused(deployment, tmp_path, models):
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(_config(deployment.triton, deployment.comps, models)))
    run = subprocess.run([str(binary("sidecar")), "--config", str(path)], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 1, run.stderr[-3000:]
    return run.stderr


def test_startup_refuses_what_would_change_clients(deployment, tmp_path):
    # An explicit model under the ensemble's name with its own signature:
    # every difference is listed.
    err = _refused(deployment, tmp_path, [
        {"name": "pet_scores", "backbone": {"model": "enc", "output": "embeddings"},
         "heads": [{"task": "a", "model": "cls_a"}]}])
    for line in ['models[0].name: input "pixel_values" is served, but Triton\'s "pet_scores" has no such input (its inputs: pixels, mask)',
                 'models[0].name: input "region_mask" is served',
                 'models[0].name: input "pixels" of Triton\'s "pet_scores" is not served',
                 'models[0].name: input "mask" of Triton\'s "pet_scores" is not served',
                 'models[0].name: output "scores_raw" is served, but Triton\'s "pet_scores" has no such output',
                 'models[0].name: output "scores" of Triton\'s "pet_scores" is not served',
                 "signature: differs"]:
        assert line in err, err
    # A backbone other than the calibrated one, and a tensor the ensemble
    # lacks, reported together.
    err = _refused(deployment, tmp_path, [{"name": "pet_classifier_nb", "correct": "emb"},
                                          {"name": "pet_classifier", "correct": "embeddings"}])
    assert ('models[0].correct: model "enc_nb" output "embeddings" would be corrected with the components of "pets", '
            'calibrated on model "enc" output "embeddings"') in err, err
    assert 'models[1].correct: ensemble "pet_classifier": no step produces tensor "embeddings"' in err, err


def test_signature_differs_serves_the_sidecars_own(deployment, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(_config(deployment.triton, deployment.comps, [
        {"name": "pet_scores", "signature": "differs", "backbone": {"model": "enc", "output": "embeddings"},
         "heads": [{"task": "a", "model": "cls_a"}]}])))
    side = Sidecar(path, tmp_path).start()
    try:
        client = grpcclient.InferenceServerClient(side.grpc)
        md = client.get_model_metadata("pet_scores", as_json=True)
        client.close()
        assert md["platform"] == "react" and [o["name"] for o in md["outputs"]] == ["scores_raw"], md
    finally:
        assert side.stop() == 0
