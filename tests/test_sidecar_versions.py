"""End to end: the sidecar as a drop-in for a user whose repository has
several versions (tests/graph_repo.py's write_versions: names with dots
and dashes, a dynamic batcher, an encoder with versions 1 and 2, an
ensemble with versions 1 and 2 whose encoder step pins version 1, and one
whose encoder step takes Triton's choice), with the real Triton and the
official tritonclient. The sidecar's configuration is what a newcomer
writes from docs/sidecar.md; it lets the repository index through.

- A request naming version 1 of the ensemble, without a preference, gets
  Triton's answer byte for byte over gRPC, HTTP binary and HTTP JSON (was
  NOT_FOUND), and Triton's statistics of version 1 count it, the sidecar's
  (version 2) do not; with a preference it is NOT_FOUND, saying what to
  send. Version 2 with a preference is the graph corrected.
- Statistics and repository index list both versions, as Triton does.
- The classification of a BYTES output with a preference is refused with
  Triton's code for the ensemble (INVALID_ARGUMENT / 400), and Triton
  keeps serving (asked of the step, it crashed Triton 2.51).
- Start-up refuses the ensemble whose encoder step runs version 2 with
  components calibrated on version 1 (it used to correct it silently).
- A version of the backbone that Triton loads after start-up (model
  control in poll mode) is not corrected with the statistics of the one
  calibrated: a corrected request is refused (INTERNAL), saying what to
  do; an uncorrected one is Triton's.
- A pass-through model whose name has a dot, sent FP16 data as JSON,
  gets Triton's answer byte for byte (was the sidecar's own message).
"""

import json
import shutil
import subprocess
import types

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import graph_math as gm  # tests/graph_models/graph_math.py
import graph_repo
from sidecar_helpers import Sidecar, Triton, config_text, http_ready, http_request, sidecar_config, wait_for
from test_sidecar_graph import PROTOCOLS, RTOL, client_infer
from testenv import ROOT, binary, missing

MODEL = graph_repo.VERSIONED
OUTPUTS = ["probs_a", "top_a", "scores_b", "label_b"]
PREF = "a=0.3,b=0.7"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The repository on a Triton of its own, and the sidecar in front of
    it with pets.v2-classifier as its graph-form model."""
    if not (ROOT / ".venv" / "bin" / "python").is_file():
        missing("no .venv: run make setup")
    root = tmp_path_factory.mktemp("versions")
    w1, w2 = graph_repo.write_versions(root / "repo")
    comps = graph_repo.fit_components(root, w1, graph_repo.VERSIONED_ENC, version=1)
    binary("sidecar")
    triton = Triton(root / "repo", root)
    side = None
    try:
        triton.start()
        cfg = sidecar_config(triton, {"pets": (comps, None)}, [{"name": MODEL, "components": "pets", "correct": "hidden.state"}],
                             management={"allow": ["RepositoryIndex"]})
        path = root / "sidecar.yaml"
        path.write_text(config_text(cfg))
        side = Sidecar(path, root).start()
        wp = root / "W.npy"
        run = subprocess.run([str(binary("calibrate")), "solve", "--components", str(comps), "--preference", PREF,
                              "--out", str(wp)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        yield types.SimpleNamespace(triton=triton, side=side, w1=w1, w2=w2, comps=comps, root=root, cfg=cfg,
                                    wp=np.load(wp))
    finally:
        if side is not None:
            side.stop()
        triton.down()


def _inputs(rows, seed):
    rng = np.random.default_rng(seed)
    return {"image": rng.integers(0, 256, size=(rows, gm.SIDE, gm.SIDE), dtype=np.uint8),
            "mask": rng.integers(0, 2, size=(rows, gm.PIXELS), dtype=np.int64)}


def _address(deployment, target, protocol):
    server = deployment.side if target == "sidecar" else deployment.triton
    return server.grpc if protocol == "grpc" else server.http


def _outcome(address, protocol, **kwargs):
    """("ok", outputs) or ("error", status code) of client_infer."""
    try:
        return ("ok", client_infer(address, protocol, MODEL, **kwargs)[0])
    except InferenceServerException as err:
        return ("error", err.status(), err.message())


def _stats(deployment, target, version):
    """(success count, inference count) of a version of the ensemble."""
    client = grpcclient.InferenceServerClient(_address(deployment, target, "grpc"))
    try:
        [s] = client.get_inference_statistics(MODEL, version, as_json=True)["model_stats"]
    finally:
        client.close()
    assert s["version"] == version, s
    return int(s["inference_stats"]["success"].get("count", 0)), int(s.get("inference_count", 0))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_another_version_without_a_preference_is_tritons(deployment, protocol):
    x = _inputs(3, 1)
    before = {t: _stats(deployment, t, v) for t, v in (("triton", "1"), ("sidecar", "2"))}
    want = _outcome(_address(deployment, "triton", protocol), protocol, inputs=x, outputs=OUTPUTS, version="1")
    got = _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=OUTPUTS, version="1")
    assert want[0] == "ok" and got[0] == "ok", (want, got)
    for name in OUTPUTS:
        a, b = got[1][name], want[1][name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert (a.tolist() == b.tolist()) if a.dtype == np.object_ else (a.tobytes() == b.tobytes()), name
    # Triton counted both (its own and the relayed one) under version 1;
    # the sidecar's version 2 counted neither.
    after = {t: _stats(deployment, t, v) for t, v in (("triton", "1"), ("sidecar", "2"))}
    assert after["triton"][0] - before["triton"][0] == 2, (before, after)
    assert after["sidecar"] == before["sidecar"], (before, after)
    # A version Triton does not have: Triton's answer.
    want = _outcome(_address(deployment, "triton", protocol), protocol, inputs=x, outputs=OUTPUTS, version="3")
    got = _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=OUTPUTS, version="3")
    assert got == want and got[0] == "error", (got, want)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_preference_corrects_the_served_version_only(deployment, protocol):
    x = _inputs(4, 2)
    headers = {"react-preference": PREF}
    got = _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=OUTPUTS, version="1",
                   headers=headers)
    code = "StatusCode.NOT_FOUND" if protocol == "grpc" else "404"
    assert got[0] == "error" and got[1] == code and "version 1 takes no preference" in got[2], got
    before = _stats(deployment, "sidecar", "2")
    for version in ("2", ""):
        got = _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=OUTPUTS, version=version,
                       headers=headers)
        assert got[0] == "ok", got

        def correct(emb):
            return (emb.astype(np.float64) @ deployment.wp.astype(np.float64).T).astype(np.float16)

        # The ensemble's encoder step pins version 1: its weights.
        want, _ = gm.graph(x["image"], x["mask"], deployment.w1, correct)
        for name in ("probs_a", "scores_b"):
            scale = max(float(np.abs(want[name]).max()), 1e-6)
            assert float(np.abs(got[1][name] - want[name]).max()) <= RTOL * scale, (version, name)
    assert _stats(deployment, "sidecar", "2")[0] - before[0] == 2


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_statistics_and_index_list_every_version(deployment, protocol):
    lib = grpcclient if protocol == "grpc" else httpclient
    kw = {"as_json": True} if protocol == "grpc" else {}
    versions = {}
    for target in ("triton", "sidecar"):
        client = lib.InferenceServerClient(_address(deployment, target, protocol))
        try:
            stats = client.get_inference_statistics("", **kw)["model_stats"]
            index = client.get_model_repository_index(**kw)
        finally:
            client.close()
        index = index.get("models", []) if protocol == "grpc" else index
        versions[target] = (sorted(s["version"] for s in stats if s["name"] == MODEL),
                            sorted((e["version"], e["state"]) for e in index if e["name"] == MODEL),
                            sorted((e["name"], e["version"]) for e in index))
    assert versions["sidecar"] == versions["triton"], versions
    assert versions["triton"][0] == ["1", "2"], versions


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_classification_of_a_bytes_output_is_refused_as_triton_refuses_it(deployment, protocol):
    x = _inputs(2, 3)
    want = _outcome(_address(deployment, "triton", protocol), protocol, inputs=x, outputs=["label_b"], class_count=1)
    got = _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=["label_b"], class_count=1,
                   headers={"react-preference": PREF})
    assert want[0] == got[0] == "error" and got[1] == want[1], (got, want)
    assert "classification of a BYTES output is not supported" in got[2], got
    assert http_ready(deployment.triton.http), "Triton went down"
    # Its data, corrected, is served.
    assert _outcome(_address(deployment, "sidecar", protocol), protocol, inputs=x, outputs=["label_b"],
                    headers={"react-preference": PREF})[0] == "ok"


def test_startup_refuses_another_version_of_the_calibrated_backbone(deployment, tmp_path):
    cfg = dict(deployment.cfg, models=[{"name": graph_repo.LATEST, "components": "pets", "correct": "hidden.state"}])
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(cfg))
    run = subprocess.run([str(binary("sidecar")), "--config", str(path)], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 1, run.stderr[-3000:]
    assert ('models[0].correct: model "enc-v" output "embeddings": version 2 answers, but the components of "pets" '
            'were calibrated on version 1') in run.stderr, run.stderr[-3000:]


@pytest.mark.parametrize("datatype", ["FP16", "FP32"])
def test_pass_through_json_data_is_answered_as_triton(deployment, datatype):
    """cls.a takes FP16: JSON data in FP16 is refused by Triton itself (no
    JSON form), in FP32 for its datatype; the sidecar answers the same."""
    body = json.dumps({"inputs": [{"name": "emb_in", "shape": [1, gm.D], "datatype": datatype,
                                   "data": [0.5] * gm.D}]}).encode()
    answers = [http_request(server.http, "POST", "/v2/models/cls.a/infer", body, {"Content-Type": "application/json"})
               for server in (deployment.triton, deployment.side)]
    (t_status, t_headers, t_body), (s_status, s_headers, s_body) = answers
    assert t_status == 400, answers[0]
    assert (s_status, s_headers.get("content-type"), s_body) == (t_status, t_headers.get("content-type"), t_body), answers


def test_a_backbone_version_loaded_later_is_not_corrected(tmp_path):
    """pets-latest's encoder step takes Triton's choice. Started with only
    version 1 of the encoder (the calibrated one), the sidecar serves; once
    Triton (polling its repository) loads version 2, a corrected request is
    refused instead of correcting version 2's embedding with version 1's
    statistics."""
    if not (ROOT / ".venv" / "bin" / "python").is_file():
        missing("no .venv: run make setup")
    w1, _ = graph_repo.write_versions(tmp_path / "repo")
    comps = graph_repo.fit_components(tmp_path, w1, graph_repo.VERSIONED_ENC, version=1)
    v2 = tmp_path / "repo" / graph_repo.VERSIONED_ENC / "2"
    shutil.move(v2, tmp_path / "enc-v2")
    triton = Triton(tmp_path / "repo", tmp_path, extra=["--", "--model-control-mode=poll", "--repository-poll-secs=1"])
    side = None
    try:
        triton.start()
        cfg = sidecar_config(triton, {"pets": (comps, None)},
                             [{"name": graph_repo.LATEST, "components": "pets", "correct": "hidden.state"}])
        path = tmp_path / "sidecar.yaml"
        path.write_text(config_text(cfg))
        side = Sidecar(path, tmp_path).start()
        x = _inputs(2, 5)

        def ask(headers):
            try:
                client_infer(side.grpc, "grpc", graph_repo.LATEST, x, OUTPUTS, headers=headers)
                return "ok"
            except InferenceServerException as err:
                return (err.status(), err.message())

        assert ask({"react-preference": PREF}) == "ok"
        shutil.move(tmp_path / "enc-v2", v2)

        def loaded():
            client = grpcclient.InferenceServerClient(triton.grpc)
            try:
                return client.is_model_ready(graph_repo.VERSIONED_ENC, "2")
            finally:
                client.close()

        wait_for("version 2 of the encoder", loaded, timeout=60, interval=0.5)
        got = ask({"react-preference": PREF})
        assert got[0] == "StatusCode.INTERNAL", got
        assert ('ensemble step 1 model "enc-v" answered from version 2, but the components of "pets" were calibrated '
                "on version 1: pin version 1") in got[1], got
        assert ask({"react-preference": "none"}) == "ok"
    finally:
        if side is not None:
            side.stop()
        triton.down()
