"""The sidecar in operation, on dedicated instances: each test starts its
own Triton (scripts/triton-up on free ports, a small model repository of
symlinks to three zoo models, stopped with scripts/triton-down even on
failure) and its own sidecar (bin/sidecar, rebuilt when older than the Go
sources, with a configuration written here, stopped with SIGTERM).

- Triton killed under load: requests fail with UNAVAILABLE / 502 saying
  Triton is unavailable, without its address (the log has it), the
  sidecar lives on, and once Triton is back on the
  same ports the answers are right again; before the models are built the
  sidecar says it is not ready.
- Reloads under load (a corrupt components file, invalid configurations, a
  new preset, a Kubernetes ConfigMap swap, SIGHUP): failed reloads keep the
  previous state serving, good ones take effect, no request fails.
- Limits: 413 over limits.max_request_bytes (HTTP bodies, gzip bombs, gRPC
  messages), 400 for malformed bodies; react-* keys never reach Triton
  through a controllable model, react-* headers never through the relay.
- A bad configuration stops start-up with every problem and its path.
- scripts/serve: its ready line, serving through it, and a clean SIGINT.

Needs the venv, go and the zoo data; without them the tests skip, or fail
when REACT_E2E=1.
"""

import json
import os
import pathlib
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
import zlib

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from sidecar_helpers import (IMAGE, LOGITS, Sidecar, Triton, assert_close, atomic_write, config_text, free_ports,
                             http_request, images, metric, port_open, reference_logits, scrape, sidecar_config,
                             small_repo, wait_for)
from testenv import ROOT, ZOO, binary

COMPONENTS = ZOO / "components.safetensors"
FASHION = {"name": "fashion", "components": "zoo", "backbone": {"model": "backbone_adamerging", "output": "feature"},
           "heads": [{"task": "fashion", "model": "head_fashion"}]}
MNIST = {"name": "mnist", "components": "zoo", "backbone": {"model": "backbone_adamerging", "output": "feature"},
         "heads": [{"task": "mnist", "model": "head_mnist"}]}
ICL = "Inference-Header-Content-Length"


@pytest.fixture
def cleanup():
    """Functions to run at teardown, last first, whatever the outcome."""
    actions = []
    yield actions
    for action in reversed(actions):
        try:
            action()
        except Exception as err:  # noqa: BLE001 - teardown goes on
            print(f"cleanup: {err!r}")


def _triton(tmp_path, cleanup, test_models=(), extra=(), start=True):
    """A Triton of its own on the small repository; stopped at teardown."""
    repo = small_repo(tmp_path / "models", test_models=test_models)
    triton = Triton(repo, tmp_path, extra)
    cleanup.append(triton.down)
    if start:
        triton.start()
        _check_loaded(triton, ["backbone_adamerging", "head_fashion", "head_mnist", *test_models])
    return triton


def _check_loaded(triton, models):
    client = grpcclient.InferenceServerClient(triton.grpc)
    try:
        assert [m for m in models if not client.is_model_ready(m)] == []
    finally:
        client.close()


def _sidecar(cleanup, config, workdir, start=True, **kwargs):
    side = Sidecar(config, workdir)
    cleanup.append(side.stop)
    if start:
        side.start(**kwargs)
    return side


def _write(path, cfg):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config_text(cfg))
    return path


def _copy_components(directory):
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(shutil.copyfile(COMPONENTS, directory / "components.safetensors"))


def _status(err):
    return str(err.status()).replace("StatusCode.", "")


def _infer(address, protocol, model, x, headers=None, parameters=None):
    module = grpcclient if protocol == "grpc" else httpclient
    client = module.InferenceServerClient(address)
    try:
        inp = module.InferInput(IMAGE, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        return client.infer(model, [inp], headers=dict(headers) if headers else None,
                            parameters=dict(parameters) if parameters else None)
    finally:
        client.close()


def _echoed(result):
    response = result.get_response()
    if isinstance(response, dict):
        return response["parameters"]["react-preference"]
    return response.parameters["react-preference"].string_param


class Load:
    """Clients sending requests in threads, one per case, until stopped;
    each answer is checked against the expected logits and echoed
    preference, and recorded as (start, end, case, outcome, detail) with
    outcome ok, wrong or error."""

    def __init__(self, sidecar, cases):
        # cases: (name, protocol, model, x, headers, parameters, want logits, canonical)
        self.sidecar, self.cases = sidecar, cases
        self.records, self.lock, self.stopping = [], threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(len(cases))]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=60)
        assert not [t for t in self.threads if t.is_alive()], "a client thread did not stop"

    def _run(self, i):
        _, protocol, model, x, headers, parameters, want, canonical = self.cases[i]
        module = grpcclient if protocol == "grpc" else httpclient
        client = module.InferenceServerClient(self.sidecar.grpc if protocol == "grpc" else self.sidecar.http)
        inp = module.InferInput(IMAGE, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        deadline = {"client_timeout": 60} if protocol == "grpc" else {}
        while not self.stopping.is_set():
            start = time.monotonic()
            try:
                result = client.infer(model, [inp], headers=dict(headers) if headers else None,
                                      parameters=dict(parameters) if parameters else None, **deadline)
                got, echoed = result.as_numpy(LOGITS), _echoed(result)
                scale = float(np.abs(want).max())
                diff = float(np.abs(got.astype(np.float64) - want).max())
                if echoed == canonical and diff <= 1e-4 * scale:
                    outcome, detail = "ok", None
                else:
                    outcome, detail = "wrong", f"echoed {echoed!r}, max |diff| {diff:.3e} (scale {scale:.3e})"
            except InferenceServerException as err:
                outcome, detail = "error", (_status(err), err.message())
            except Exception as err:  # noqa: BLE001 - recorded, and fails the test
                outcome, detail = "error", ("exception", repr(err))
            with self.lock:
                self.records.append((start, time.monotonic(), i, outcome, detail))
            # Pacing, so that failing calls do not spin on two cores.
            self.stopping.wait(0.01)
        client.close()

    def count(self, outcome, case=None, since=0.0):
        with self.lock:
            return sum(1 for s, _, i, o, _ in self.records if o == outcome and s >= since and case in (None, i))

    def where(self, outcome):
        with self.lock:
            return [r for r in self.records if r[3] == outcome]

    def wait_all_ok(self, what, n=3, since=0.0, timeout=60):
        """Until every case has n right answers to requests sent after since."""
        wait_for(what, lambda: all(self.count("ok", i, since) >= n for i in range(len(self.cases))), timeout=timeout)


# ---------------------------------------------------------------- faults


def test_triton_killed_and_restarted(tmp_path, cleanup):
    triton = _triton(tmp_path, cleanup, start=False)
    triton.ports = free_ports(3)
    comps = _copy_components(tmp_path / "components")
    cfg = sidecar_config(triton, {"zoo": (comps, {"pair": "fashion=1,mnist=1"})}, [FASHION])
    cfg["triton"]["startup_timeout"] = "5m"
    side = _sidecar(cleanup, _write(tmp_path / "sidecar.yaml", cfg), tmp_path, wait_ready=False)
    x = images("fashion", 2, seed=1)

    # Before Triton is up the controllable models cannot be built: the
    # sidecar is not ready, and says so for the model too.
    assert http_request(side.http, "GET", "/v2/health/ready")[0] == 503
    client = grpcclient.InferenceServerClient(side.grpc)
    try:
        assert client.is_server_ready() is False
    finally:
        client.close()
    for protocol, address, code in (("grpc", side.grpc, "UNAVAILABLE"), ("http", side.http, "503")):
        with pytest.raises(InferenceServerException) as err:
            _infer(address, protocol, "fashion", x)
        assert _status(err.value) == code, err.value.message()

    triton.start(triton.ports)
    side.wait_ready(timeout=120)
    direct = grpcclient.InferenceServerClient(triton.grpc)
    cases = [
        ("grpc-parameter", "grpc", "fashion", x, None, {"react-preference": "fashion=0.6,mnist=0.4"},
         reference_logits(direct, x, "fashion=0.6,mnist=0.4", COMPONENTS), "fashion=0.6,mnist=0.4"),
        ("http-preset", "http", "fashion", x, {"react-preset": "pair"}, None,
         reference_logits(direct, x, "fashion=0.5,mnist=0.5", COMPONENTS), "fashion=0.5,mnist=0.5"),
        ("grpc-none", "grpc", "fashion", x, None, None, reference_logits(direct, x, None, COMPONENTS), "none"),
    ]
    direct.close()
    with Load(side, cases) as load:
        load.wait_all_ok("answers before the outage")
        killed = time.monotonic()
        triton.kill()
        triton.down()  # reaps the Python stubs the killed server leaves
        wait_for("every client failing", lambda: all(load.count("error", i, killed) for i in range(len(cases))),
                 timeout=60)
        assert side.alive(), "the sidecar died with Triton"
        triton.start(triton.ports)
        restarted = time.monotonic()
        load.wait_all_ok("right answers after Triton is back", since=restarted, timeout=60)
        recovered = time.monotonic()
    assert load.where("wrong") == []
    for start, end, i, _, (code, message) in load.where("error"):
        assert end >= killed and start <= recovered, f"{cases[i][0]}: failed outside the outage: {code} {message}"
        assert code == ("UNAVAILABLE" if cases[i][1] == "grpc" else "502"), f"{cases[i][0]}: {code} {message}"
        assert "upstream Triton" in message and "127.0.0.1" not in message, \
            f"{cases[i][0]}: the message should say Triton is away, not where: {message}"
    assert triton.grpc in side.log(), f"the sidecar's log does not name Triton {triton.grpc}"
    errors = load.where("error")
    print(f"{load.count('ok')} right answers, {len(errors)} failures during the outage, e.g. {errors[0][4]}; "
          f"back {recovered - restarted:.1f} s after Triton's restart")
    assert side.stop() == 0


# ---------------------------------------------------------------- reloads


def _reload_state(side):
    s = scrape(side.metrics)
    return (metric(s, "react_config_reloads_total", result="success"),
            metric(s, "react_config_reloads_total", result="failure"),
            metric(s, "react_config_last_reload_successful"))


def _expect_reload(side, load, action, result):
    """Runs action, waits for the one reload it causes, checks its result
    and the gauge, and waits until every client got more right answers
    after it."""
    ok, failed, _ = _reload_state(side)
    action()
    state = wait_for(f"a reload (want {result})",
                     lambda: (lambda s: s if s[0] + s[1] > ok + failed else None)(_reload_state(side)), timeout=60)
    want = (ok + (result == "success"), failed + (result == "failure"))
    assert state[:2] == want, f"reloads (success, failure) {state[:2]}, want {want}:\n{side.log()[-3000:]}"
    assert state[2] == (1 if result == "success" else 0)
    load.wait_all_ok(f"answers after the {result} reload", n=2, since=time.monotonic())


def test_reloads_under_load(tmp_path, cleanup):
    triton = _triton(tmp_path, cleanup)
    direct = grpcclient.InferenceServerClient(triton.grpc)
    xf, xm = images("fashion", 2, seed=2), images("mnist", 2, seed=2)

    def ref(x, pref, head="head_fashion"):
        return reference_logits(direct, x, pref, COMPONENTS, head=head)

    # S1: a plain configuration file beside its components file.
    plain = tmp_path / "plain"
    comps = _copy_components(plain)
    original = comps.read_bytes()
    presets = {"pair": "fashion=1,mnist=1"}
    cfg1 = sidecar_config(triton, {"zoo": (comps, presets)}, [FASHION, MNIST])
    s1 = _sidecar(cleanup, _write(plain / "sidecar.yaml", cfg1), tmp_path)

    # S2: a Kubernetes ConfigMap volume: sidecar.yaml -> ..data/sidecar.yaml,
    # ..data -> ..2026_11_23_v1.
    cm = tmp_path / "configmap"
    comps2 = _copy_components(tmp_path / "components2")
    cfg2 = sidecar_config(triton, {"zoo": (comps2, presets)}, [FASHION, MNIST])
    _write(cm / "..2026_11_23_v1" / "sidecar.yaml", cfg2)
    (cm / "..data").symlink_to("..2026_11_23_v1")
    (cm / "sidecar.yaml").symlink_to("..data/sidecar.yaml")
    s2 = _sidecar(cleanup, cm / "sidecar.yaml", tmp_path)

    cases1 = [
        ("s1-grpc-header", "grpc", "fashion", xf, {"react-preference": "fashion=0.6,mnist=0.4"}, None,
         ref(xf, "fashion=0.6,mnist=0.4"), "fashion=0.6,mnist=0.4"),
        ("s1-http-preset", "http", "fashion", xf, None, {"react-preset": "pair"}, ref(xf, "fashion=0.5,mnist=0.5"),
         "fashion=0.5,mnist=0.5"),
        ("s1-grpc-none", "grpc", "mnist", xm, None, None, ref(xm, None, "head_mnist"), "none"),
    ]
    cases2 = [("s2-grpc-parameter", "grpc", "mnist", xm, None, {"react-preference": "mnist=1"},
               ref(xm, "mnist=1", "head_mnist"), "mnist=1")]
    with Load(s1, cases1) as load1, Load(s2, cases2) as load2:
        load1.wait_all_ok("S1 answering")
        load2.wait_all_ok("S2 answering")

        # (a) The components file replaced by a truncated copy: the reload
        # fails, the previous W_p keep serving.
        _expect_reload(s1, load1, lambda: atomic_write(comps, original[:len(original) // 2]), "failure")
        assert "reload failed" in s1.log()
        # ... and by a copy of the same size with flipped bytes (its
        # checksum no longer matches).
        corrupt = bytearray(original)
        for i in range(len(corrupt) - 4096, len(corrupt), 512):
            corrupt[i] ^= 0xFF
        _expect_reload(s1, load1, lambda: atomic_write(comps, bytes(corrupt)), "failure")
        _expect_reload(s1, load1, lambda: atomic_write(comps, original), "success")

        # (b) Invalid configurations: an unknown key, then a preset naming
        # a task the components file lacks.
        bad_key = json.loads(json.dumps(cfg1))
        bad_key["limits"] = {"max_request_byts": "1MiB"}
        _expect_reload(s1, load1, lambda: atomic_write(plain / "sidecar.yaml", config_text(bad_key)), "failure")
        assert "max_request_byts" in s1.log()
        bad_preset = sidecar_config(triton, {"zoo": (comps, {**presets, "cars": "cars=1"})}, [FASHION, MNIST])
        _expect_reload(s1, load1, lambda: atomic_write(plain / "sidecar.yaml", config_text(bad_preset)), "failure")
        assert "components[0].presets.cars" in s1.log()

        # (c) A valid change, a new preset: unknown before, served after.
        with pytest.raises(InferenceServerException) as err:
            _infer(s1.grpc, "grpc", "fashion", xf, headers={"react-preset": "fm"})
        assert _status(err.value) == "INVALID_ARGUMENT"
        # The same change adds a controllable model; the statistics of the
        # others outlive the rebuild.
        stats_client = grpcclient.InferenceServerClient(s1.grpc)
        served = int(stats_client.get_inference_statistics("fashion", as_json=True)["model_stats"][0]
                      ["inference_stats"]["success"]["count"])
        assert not stats_client.is_model_ready("fashion_b")
        extra = {**FASHION, "name": "fashion_b"}
        good = sidecar_config(triton, {"zoo": (comps, {**presets, "fm": "fashion=3,mnist=1"})}, [FASHION, MNIST, extra])
        _expect_reload(s1, load1, lambda: atomic_write(plain / "sidecar.yaml", config_text(good)), "success")
        result = _infer(s1.grpc, "grpc", "fashion", xf, headers={"react-preset": "fm"})
        assert _echoed(result) == "fashion=0.75,mnist=0.25"
        assert_close(result.as_numpy(LOGITS), ref(xf, "fashion=0.75,mnist=0.25"))
        assert stats_client.is_model_ready("fashion_b")
        result = _infer(s1.http, "http", "fashion_b", xf, parameters={"react-preference": "mnist=1"})
        assert_close(result.as_numpy(LOGITS), ref(xf, "mnist=1"))
        assert int(stats_client.get_inference_statistics("fashion", as_json=True)["model_stats"][0]
                   ["inference_stats"]["success"]["count"]) > served
        stats_client.close()

        # (e) SIGHUP reloads, even with nothing changed.
        _expect_reload(s1, load1, lambda: s1.proc.send_signal(signal.SIGHUP), "success")
        assert "forced=true" in s1.log()

        # (d) The ConfigMap update: a new timestamped directory, a ..data_tmp
        # link to it renamed over ..data.
        def swap(version, cfg):
            _write(cm / version / "sidecar.yaml", cfg)
            (cm / "..data_tmp").symlink_to(version)
            os.rename(cm / "..data_tmp", cm / "..data")

        bad2 = json.loads(json.dumps(cfg2))
        bad2["cache"] = {"size": -1}
        _expect_reload(s2, load2, lambda: swap("..2026_11_23_v2", bad2), "failure")
        good2 = sidecar_config(triton, {"zoo": (comps2, {**presets, "m3": "mnist=3,fashion=1"})}, [FASHION, MNIST])
        _expect_reload(s2, load2, lambda: swap("..2026_11_23_v3", good2), "success")
        result = _infer(s2.http, "http", "mnist", xm, parameters={"react-preset": "m3"})
        assert _echoed(result) == "fashion=0.25,mnist=0.75"
        assert_close(result.as_numpy(LOGITS), ref(xm, "fashion=0.25,mnist=0.75", "head_mnist"))
    direct.close()
    for load in (load1, load2):
        assert load.where("error") == [] and load.where("wrong") == []
    print(f"requests during the reloads: S1 {load1.count('ok')}, S2 {load2.count('ok')}, none failed")
    assert s1.stop() == 0 and s2.stop() == 0


# ---------------------------------------------------------------- limits, and ReACT's keys


def _tiny_components(directory):
    """A D=4 components file with tasks a and b, fitted by calibrate fit from
    random embeddings: a controllable model can then put affine_fp32 (4
    features) in front of echo_parameters, which shows what a head receives."""
    emb = pathlib.Path(directory) / "emb"
    emb.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for task in "ab":
        merged = rng.normal(size=(40, 4)).astype(np.float32)
        np.save(emb / f"{task}.merged.npy", merged)
        np.save(emb / f"{task}.expert.npy", (merged @ rng.normal(size=(4, 4))).astype(np.float32))
    out = pathlib.Path(directory) / "tiny.safetensors"
    run = subprocess.run([str(binary("calibrate")), "fit", "--embeddings", str(emb), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return out


def _echo(address, protocol, model, parameters=None, headers=None):
    """What echo_parameters received (as a head, or passed through)."""
    module = grpcclient if protocol == "grpc" else httpclient
    client = module.InferenceServerClient(address)
    try:
        inp = module.InferInput("INPUT0", [1, 4], "FP32")
        inp.set_data_from_numpy(np.ones((1, 4), np.float32))
        result = client.infer(model, [inp], parameters=parameters, headers=headers)
        return json.loads(result.as_numpy("PARAMETERS")[0]), result
    finally:
        client.close()


def test_limits_and_own_keys(tmp_path, cleanup):
    # Triton passes these headers on to backends as parameters, so that
    # echo_parameters shows which reached it.
    triton = _triton(tmp_path, cleanup, test_models=("affine_fp32", "echo_parameters"),
                     extra=["--", "--grpc-header-forward-pattern=x-probe|react-.*",
                            "--http-header-forward-pattern=x-probe|react-.*"])
    comps = _copy_components(tmp_path / "components")
    echo_model = {"name": "echo_ctl", "components": "tiny", "backbone": {"model": "affine_fp32", "output": "OUTPUT0"},
                  "heads": [{"task": "a", "model": "echo_parameters"}]}
    cfg = sidecar_config(triton, {"zoo": (comps, None), "tiny": (_tiny_components(tmp_path), None)},
                         [FASHION, echo_model], limits={"max_request_bytes": "1MiB"})
    side = _sidecar(cleanup, _write(tmp_path / "sidecar.yaml", cfg), tmp_path)
    limit = 1 << 20

    def rejected(reason):
        return metric(scrape(side.metrics), "react_rejected_requests_total", reason=reason)

    too_large, malformed = rejected("too_large"), rejected("malformed")
    # Over the limit: a body, and a gzip body that inflates beyond it.
    for model in ("affine_fp32", "fashion"):
        body = b'{"inputs":[' + b" " * (limit + 65536) + b"]}"
        status, _, answer = http_request(side.http, "POST", f"/v2/models/{model}/infer", body)
        assert status == 413, answer[:300]
        assert str(limit) in json.loads(answer)["error"]
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = co.compress(b"\0" * (2 * limit)) + co.flush()
    status, _, answer = http_request(side.http, "POST", "/v2/models/fashion/infer", bomb, {"Content-Encoding": "gzip"})
    assert status == 413, answer[:300]
    assert rejected("too_large") - too_large == 3
    # A gRPC message over the limit, to a controllable model and to another:
    # grpc itself refuses it, at the limit the sidecar started with, before
    # holding more of it (the HTTP refusals above are the ones counted).
    x = images("fashion", 256, seed=3)
    for model in ("fashion", "backbone_adamerging"):
        with pytest.raises(InferenceServerException) as err:
            _infer(side.grpc, "grpc", model, x, parameters={"pad": "p" * 300_000})
        assert _status(err.value) == "RESOURCE_EXHAUSTED" and str(limit) in err.value.message(), err.value.message()
    # Malformed: Triton's own answer to a header it cannot parse, 500.
    status, _, answer = http_request(side.http, "POST", "/v2/models/fashion/infer", b"\x00" * 5000, {ICL: "20"})
    assert status == 500 and json.loads(answer)["error"].startswith("failed to parse the request JSON buffer"), answer[:300]
    assert rejected("malformed") - malformed == 1
    # Under the limit the same 256 images are served, over both protocols.
    direct = grpcclient.InferenceServerClient(triton.grpc)
    want = reference_logits(direct, x, None, COMPONENTS)
    direct.close()
    for protocol in ("grpc", "http"):
        got = _infer(side.grpc if protocol == "grpc" else side.http, protocol, "fashion", x).as_numpy(LOGITS)
        assert np.array_equal(got, want), protocol

    # ReACT's keys never reach Triton. Through a controllable model, the
    # head's request carries the client's other parameters (and, over gRPC,
    # its other metadata) but no react-* key.
    own = {"react-preference": "a=1", "REACT-Extra": "x", "keep": "y"}
    seen, result = _echo(side.grpc, "grpc", "echo_ctl", parameters=own, headers={"x-probe": "1", "react-preset": "zz"})
    assert _echoed(result) == "a=1"
    assert seen == {"keep": "y", "x-probe": "1"}
    seen, result = _echo(side.http, "http", "echo_ctl", parameters=own, headers={"react-preference": "b=1"})
    assert _echoed(result) == "b=1"
    assert not [k for k in seen if k.lower().startswith("react-")] and seen["keep"] == "y", seen
    # Passing through to echo_parameters, react-* headers and metadata are
    # dropped and others kept (react-* parameters: see test_sidecar.py).
    for protocol, address in (("grpc", side.grpc), ("http", side.http)):
        # (gRPC metadata keys are lower case; HTTP header names any case.)
        preset = "react-preset" if protocol == "grpc" else "React-Preset"
        seen, _ = _echo(address, protocol, "echo_parameters", parameters={"keep": "y"},
                        headers={"x-probe": "1", "react-preference": "a=1", preset: "zz"})
        assert {k.lower(): v for k, v in seen.items()} == {"keep": "y", "x-probe": "1"}, (protocol, seen)
    assert side.stop() == 0


# ---------------------------------------------------------------- start-up


def _run_sidecar(config, timeout=120):
    return subprocess.run([str(binary("sidecar")), "--config", str(config)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class _Nowhere:
    """Triton addresses where nothing listens."""

    def __init__(self):
        ports = free_ports(2)
        self.grpc, self.http = f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"


def test_bad_configuration_keys_stop_startup(tmp_path):
    """Unknown keys and a value of the wrong type: exit 1, every problem
    named with its path."""
    comps = _copy_components(tmp_path)
    cfg = sidecar_config(_Nowhere(), {"zoo": (comps, None)}, [FASHION])
    cfg["limits"] = {"max_request_byts": "1MiB"}
    cfg["cache"] = {"sise": 10}
    cfg["models"][0]["heads"][0]["tsk"] = "fashion"
    cfg["log"] = {"level": ["info"]}
    cfg["listen"]["shutdown_timeout"] = "12 parsecs"
    run = _run_sidecar(_write(tmp_path / "bad.yaml", cfg))
    assert run.returncode == 1, run.stderr
    for path in ("limits.max_request_byts", "cache.sise", "models[0].heads[0].tsk", "log.level",
                 "listen.shutdown_timeout"):
        assert path in run.stderr, f"{path} not named:\n{run.stderr}"


def test_bad_configuration_values_stop_startup(tmp_path):
    """Values out of range, a duplicate model, a missing components file:
    exit 1, every problem named with its path."""
    comps = _copy_components(tmp_path)
    cfg = sidecar_config(_Nowhere(), {"zoo": (comps, None), "other": (tmp_path / "missing.safetensors", None)},
                         [FASHION, FASHION])
    cfg["cache"] = {"size": -1}
    cfg["limits"] = {"max_preference_length": 0}
    run = _run_sidecar(_write(tmp_path / "bad.yaml", cfg))
    assert run.returncode == 1, run.stderr
    for path in ("cache.size", "limits.max_preference_length", "models[1].name", "components[1].path"):
        assert path in run.stderr, f"{path} not named:\n{run.stderr}"


def test_unknown_key_and_bad_value_both_named(tmp_path):
    comps = _copy_components(tmp_path)
    cfg = sidecar_config(_Nowhere(), {"zoo": (comps, None)}, [FASHION])
    cfg["limits"] = {"max_request_byts": "1MiB"}
    cfg["cache"] = {"size": -1}
    run = _run_sidecar(_write(tmp_path / "bad.yaml", cfg))
    assert run.returncode == 1
    assert "limits.max_request_byts" in run.stderr and "cache.size" in run.stderr, run.stderr


def test_models_that_do_not_fit_stop_startup(tmp_path, cleanup):
    """Problems found against Triton and the components file: a head whose
    task the components file lacks, a head model Triton does not have, a
    backbone output that does not exist, a preset naming an unknown task.
    Exit 1 at once (one problem is permanent), every problem named."""
    triton = _triton(tmp_path, cleanup)
    comps = _copy_components(tmp_path / "components")
    bad_heads = {**FASHION, "heads": [{"task": "cars", "model": "head_fashion"}, {"task": "mnist", "model": "head_nosuch"}]}
    bad_backbone = {**MNIST, "backbone": {"model": "backbone_adamerging", "output": "nosuch"}}
    cfg = sidecar_config(triton, {"zoo": (comps, {"ok": "fashion=1", "bad": "dogs=1"})}, [bad_heads, bad_backbone])
    started = time.monotonic()
    run = _run_sidecar(_write(tmp_path / "bad.yaml", cfg))
    assert run.returncode == 1, run.stderr
    assert time.monotonic() - started < 30, "start-up waited for a problem that cannot go away"
    for path, word in (("components[0].presets.bad", '"dogs"'),):
        assert re.search(re.escape(path) + r".*" + re.escape(word), run.stderr), f"{path} not named:\n{run.stderr}"
    # The preset problem stops the components entry; with a valid one the
    # models' own problems show.
    cfg = sidecar_config(triton, {"zoo": (comps, {"ok": "fashion=1"})}, [bad_heads, bad_backbone])
    run = _run_sidecar(_write(tmp_path / "bad2.yaml", cfg))
    assert run.returncode == 1, run.stderr
    for path, word in (("models[0].heads[0].task", '"cars"'), ("models[0].heads[1].model", "head_nosuch"),
                       ("models[1].backbone.output", '"nosuch"')):
        assert re.search(re.escape(path) + r": .*" + re.escape(word), run.stderr), f"{path} not named:\n{run.stderr}"


# ---------------------------------------------------------------- scripts/serve


def _running_tritonserver(pid):
    """Whether pid is a live tritonserver (a zombie waiting for its reaper is not)."""
    try:
        comm = pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return comm == "tritonserver" and state != "Z"


def test_serve_script(tmp_path, cleanup):
    repo = small_repo(tmp_path / "models")
    comps = _copy_components(tmp_path / "components")
    # scripts/serve points the sidecar at its own Triton, whatever the file says.
    cfg = sidecar_config(_Nowhere(), {"zoo": (comps, {"pair": "fashion=1,mnist=1"})}, [FASHION, MNIST])
    config = _write(tmp_path / "sidecar.yaml", cfg)
    grpc_port, http_port, metrics_port = free_ports(3)
    logs = tmp_path / "logs"
    binary("sidecar")
    proc = subprocess.Popen([str(ROOT / "scripts" / "serve"), "--grpc-port", str(grpc_port), "--http-port", str(http_port),
                             "--metrics-port", str(metrics_port), "--repo", str(repo), "--config", str(config),
                             "--logs", str(logs)], stdout=subprocess.PIPE, stderr=open(tmp_path / "serve.err", "wb"),
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                            # Ctrl-C as at a terminal: a run started in the background (nohup, &)
                            # hands its children SIGINT ignored, and bash cannot trap an ignored signal.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def stop():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        subprocess.run([str(ROOT / "scripts" / "triton-down"), "--pid", str(logs / "tritonserver.pid")],
                       capture_output=True, timeout=120)

    cleanup.append(stop)
    lines = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)], daemon=True)
    reader.start()
    try:
        line = lines.get(timeout=300)
    except queue.Empty:
        pytest.fail("scripts/serve printed nothing in 300 s:\n" + (tmp_path / "serve.err").read_text())
    assert line is not None, "scripts/serve exited before it was ready:\n" + (tmp_path / "serve.err").read_text()
    assert line.startswith(f"ready grpc=127.0.0.1:{grpc_port} http=127.0.0.1:{http_port} "), line
    triton_grpc = re.search(r"triton_grpc=(\S+)", line).group(1)
    triton_pid = int((logs / "tritonserver.pid").read_text())
    assert _running_tritonserver(triton_pid)

    x = images("fashion", 3, seed=4)
    direct = grpcclient.InferenceServerClient(triton_grpc)
    want = reference_logits(direct, x, "fashion=0.5,mnist=0.5", COMPONENTS)
    direct.close()
    for protocol, address in (("grpc", f"127.0.0.1:{grpc_port}"), ("http", f"127.0.0.1:{http_port}")):
        result = _infer(address, protocol, "fashion", x, headers={"react-preset": "pair"})
        assert _echoed(result) == "fashion=0.5,mnist=0.5"
        assert_close(result.as_numpy(LOGITS), want)

    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 0, (tmp_path / "serve.err").read_text()
    reader.join(timeout=10)
    rest = []
    while True:
        item = lines.get(timeout=10)
        if item is None:
            break
        rest.append(item)
    assert rest == [], f"more than one line on stdout: {rest}"
    for port in (grpc_port, http_port, metrics_port, int(triton_grpc.rsplit(":", 1)[1])):
        assert not port_open(port), f"port {port} still open"
    assert not _running_tritonserver(triton_pid), "the Triton of scripts/serve is still running"
    assert not (logs / "tritonserver.pid").exists()
