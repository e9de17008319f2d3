"""Live sampling end to end (issue 26's proof), against the real Triton of
scripts/test.sh serving the demo zoo (tritonmodels/repo), driven with the
official tritonclient (gRPC):

- One replica: a sidecar with no components file and no controllable
  model, serving pass-through only, with sampling on at fraction 1 for the
  fashion and mnist ensembles, is driven with the calibration split's
  inputs as traffic, half of it over gRPC and half over HTTP (the binary
  tensor extension and JSON). At shutdown it writes its live file; the
  statistics in it must equal those calibrate fit --triton computes on the
  same inputs, within 1e-9 relative.
- Two replicas: the same traffic, every other request to each of two such
  sidecars sharing one live directory (as the react-live volume), each
  rewriting its file every second. `calibrate merge --live-dir` of the two
  files gives the same statistics as fit, within 1e-9 relative; the merged
  file, named in one replica's configuration (a hot reload), serves
  corrections equal to `calibrate solve`'s W_p applied to the backbone's
  feature, and the replica's staleness metric records its error.
- Drift: a sidecar serving a components file fitted on fashion's whole
  calibration split samples the fashion model's traffic. On fashion's test
  images the live reconstruction error stays near the recorded one; when
  mnist's images are sent to the fashion model it rises, and the alert
  rule shipped in docker/prometheus-rules.yml (docs/deploy.md), evaluated
  by Prometheus' own rule manager and engine (docker/deploytest's
  alerteval) on the sidecar's /metrics scraped before and after, fires for
  that window and not for the fashion one.

The features are the same bits when Triton runs the same batches: the
traffic is sent in calibrate's chunks, one request at a time, and each
request's sample (backbone and expert calls) finishes before the next
request is sent, so that Triton's dynamic batcher never merges a sample's
call with another call; calibrate fit runs with --in-flight 1.

Needs TRITON_GRPC_ADDR and TRITON_HTTP_ADDR (exported by scripts/test.sh),
the zoo models loaded in that Triton and the zoo data. Without them the
test skips, or fails when REACT_E2E=1.
"""

import json
import subprocess
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from safetensors import safe_open
from safetensors.numpy import load_file

from sidecar_helpers import (FEATURE, IMAGE, LOGITS, Sidecar, assert_close, atomic_write, config_text, grpc_infer,
                             images, metric, reference_logits, scrape, solve_wp, wait_for)
from testenv import ROOT, ZOO, calib_images, env, manifest, need_models

BACKBONE = "backbone_adamerging"
TASKS = ["fashion", "mnist"]
N = 150  # samples per task: with the chunk below, the last request is partial
CHUNK = 64
RTOL = 1e-9
RULES = ROOT / "docker" / "prometheus-rules.yml"


@pytest.fixture(scope="module")
def triton(triton_addr):
    need_models(triton_addr, [BACKBONE, "feature_identity"] + TASKS + [f"expert_{t}" for t in TASKS] +
                [f"head_{t}" for t in TASKS])
    return triton_addr, env("TRITON_HTTP_ADDR")


@pytest.fixture(scope="module")
def traffic():
    """Each task's first N calibration images (a seeded choice), the traffic."""
    return {task: calib_images(task, N) for task in TASKS}


@pytest.fixture(scope="module")
def fit(triton, calibrate, traffic, tmp_path_factory):
    """calibrate fit --triton on the traffic, in the same chunks, one in
    flight: (tensors, metadata)."""
    out = _fit(calibrate, triton, traffic, tmp_path_factory.mktemp("fit"), "--chunk", str(CHUNK), "--in-flight", "1")
    return load_file(str(out)), _metadata(out)


def _fit(calibrate, triton, inputs, workdir, *extra):
    """Runs calibrate fit --triton on inputs ({task: images}) into
    workdir/fit.safetensors, which it returns."""
    (workdir / "inputs").mkdir()
    for task, x in inputs.items():
        np.save(workdir / "inputs" / f"{task}.npy", x)
    out = workdir / "fit.safetensors"
    cmd = [str(calibrate), "fit", "--triton", triton[0], "--inputs", str(workdir / "inputs"), "--backbone-model",
           BACKBONE, "--backbone-output", FEATURE, "--tasks", ",".join(inputs), "--quiet", "--out", str(out),
           *extra] + [f"--expert={t}=expert_{t}" for t in inputs]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"calibrate fit failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return out


def _metadata(path):
    with safe_open(str(path), framework="numpy") as f:
        return f.metadata()


def _config(triton, live_dir, replica="e2e-0", interval="1h", tasks=TASKS):
    """A pass-through sidecar sampling every request to the tasks' models."""
    grpc, http = triton
    return {
        "triton": {"grpc": grpc, "http": http, "startup_timeout": "60s"},
        "listen": {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", "metrics": "127.0.0.1:0", "shutdown_timeout": "10s"},
        "sampling": {
            "enabled": True, "fraction": 1, "replica": replica, "max_concurrent": 4,
            "checkpoint": {"dir": str(live_dir), "interval": interval, "window": "24h"},
            "backbone": {"model": BACKBONE, "output": FEATURE},
            "models": [{"name": t, "task": t} for t in tasks],
            "tasks": [{"name": t, "expert": {"model": f"expert_{t}"}} for t in tasks],
        },
    }


def _start(cfg, workdir):
    """A sidecar with the configuration cfg (a dict), once sampling is on."""
    path = workdir / f"sidecar-{cfg['sampling']['replica']}.yaml"
    path.write_text(config_text(cfg))
    sidecar = Sidecar(path, workdir).start()
    sidecar.config_dict = cfg
    wait_for("sampling on in the log", lambda: 'msg="sampling on"' in sidecar.log(), timeout=60)
    return sidecar


def _chunks(model, x):
    """The requests that send images x to model, in calibrate's chunks."""
    return [(model, x[start:start + CHUNK]) for start in range(0, len(x), CHUNK)]


def _sampled(sidecar):
    """react_sampling_requests_total summed over the models and tasks."""
    return metric(scrape(sidecar.metrics), "react_sampling_requests_total")


def _http_infer(client, model, x, binary):
    """model on images x with tritonclient.http: the binary tensor
    extension, or JSON."""
    inp = httpclient.InferInput(IMAGE, list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    return client.infer(model, [inp])


def _drive(sidecars, requests, protocols=("grpc",)):
    """Sends the requests ((model, images) pairs) one at a time, the i-th to
    sidecars[i % len(sidecars)] over protocols[i % len(protocols)] (grpc,
    http-binary or http-json), each request's sample done before the next
    request is sent: the same batches as calibrate's reach Triton, never
    merged with another."""
    grpcs = [grpcclient.InferenceServerClient(s.grpc) for s in sidecars]
    https = [httpclient.InferenceServerClient(s.http) for s in sidecars]
    sampled = [_sampled(s) for s in sidecars]
    try:
        for i, (model, x) in enumerate(requests):
            k, protocol = i % len(sidecars), protocols[i % len(protocols)]
            if protocol == "grpc":
                grpc_infer(grpcs[k], model, {IMAGE: x})
            else:
                _http_infer(https[k], model, x, binary=protocol == "http-binary")
            sampled[k] += 1
            wait_for("the request's sample", lambda: _sampled(sidecars[k]) == sampled[k], timeout=60)
    finally:
        for c in grpcs + https:
            c.close()
    for s in sidecars:
        samples = scrape(s.metrics)
        for m in s.config_dict["sampling"]["models"]:
            skipped = metric(samples, "react_sampling_skipped_total", model=m["name"])
            assert skipped == 0, f"{m['name']}: {skipped} requests not sampled"


def _assert_stats_equal(got, got_meta, fit, fit_meta, n):
    """got's statistics (a live or merged file) equal fit's within RTOL;
    returns the largest relative difference."""
    assert got_meta["d"] == str(manifest()["D"])
    worst = 0.0
    for task in TASKS:
        assert got_meta[f"task.{task}.n"] == fit_meta[f"task.{task}.n"] == str(n)
        for kind in ("S", "G"):
            a, b = got[f"{task}.{kind}"], fit[f"{task}.{kind}"]
            if kind == "G":  # a live file holds G's upper triangle
                a, b = np.triu(a), np.triu(b)
            err = np.abs(a - b).max() / np.abs(b).max()
            assert err <= RTOL, f"{task}.{kind}: relative error {err:.3g} against calibrate fit --triton (want <= {RTOL})"
            worst = max(worst, err)
    return worst


def test_live_sampling_equals_fit(triton, traffic, fit, tmp_path):
    """Half the requests over gRPC, half over HTTP (the binary tensor
    extension and JSON in turn): the statistics are the same bits."""
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    sidecar = _start(_config(triton, live_dir), tmp_path)
    try:
        _drive([sidecar], [r for task in TASKS for r in _chunks(task, traffic[task])],
               protocols=("grpc", "http-binary", "grpc", "http-json"))
        samples = scrape(sidecar.metrics)
        for task in TASKS:  # every request counted
            assert metric(samples, "react_sampling_requests_total", model=task) == len(_chunks(task, traffic[task]))
    finally:
        status = sidecar.stop()
    assert status == 0, f"the sidecar exited with {status}:\n{sidecar.log()}"
    files = sorted(live_dir.glob("*.live.safetensors"))
    assert len(files) == 1 and files[0].name.startswith("e2e-0."), f"live files: {files}\n{sidecar.log()}"
    err = _assert_stats_equal(load_file(str(files[0])), _metadata(files[0]), *fit, N)
    print(f"one replica against calibrate fit: largest relative difference {err:.3g}")


def _checkpoints(sidecar):
    return metric(scrape(sidecar.metrics), "react_sampling_checkpoints_total", result="ok")


def _reloads(sidecar):
    return metric(scrape(sidecar.metrics), "react_config_reloads_total", result="success")


def test_two_replicas_merged_equal_fit_and_serve(triton, calibrate, traffic, fit, tmp_path):
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    sidecars = []
    direct = grpcclient.InferenceServerClient(triton[0])
    try:
        for r in ("e2e-a", "e2e-b"):
            sidecars.append(_start(_config(triton, live_dir, r, interval="1s"), tmp_path))
        a = sidecars[0]
        _drive(sidecars, [r for task in TASKS for r in _chunks(task, traffic[task])])
        # Each replica's file on disk holds its last sample: a checkpoint
        # (every second) after it.
        for s in sidecars:
            done = _checkpoints(s)
            wait_for("a checkpoint after the last sample", lambda: _checkpoints(s) > done, timeout=30)
        files = sorted(live_dir.glob("*.live.safetensors"))
        assert [f.name.split(".")[0] for f in files] == ["e2e-a", "e2e-b"], files
        for task in TASKS:  # each replica saw half the requests: rows of both in every task
            rows = [int(_metadata(f)[f"task.{task}.n"]) for f in files]
            assert sum(rows) == N and min(rows) > 0, (task, rows)

        # The refresh job's merge, while the replicas serve.
        merged = tmp_path / "components-live.safetensors"
        run = subprocess.run([str(calibrate), "merge", "--live-dir", str(live_dir), "--out", str(merged)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"calibrate merge failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
        meta = _metadata(merged)
        err = _assert_stats_equal(load_file(str(merged)), meta, *fit, N)
        print(f"two replicas merged against calibrate fit: largest relative difference {err:.3g}")

        # The merged file, named in replica a's configuration: a hot reload
        # that keeps its sampler (the same sampling section). Two models
        # correct with it: fashion_live answers the fashion head's logits,
        # fashion_live_feature the corrected feature itself (its head,
        # feature_identity, returns its input).
        cfg = dict(a.config_dict)
        cfg["components"] = [{"name": "live", "path": str(merged)}]
        backbone = {"model": BACKBONE, "output": FEATURE}
        cfg["models"] = [
            {"name": "fashion_live", "components": "live", "backbone": backbone,
             "heads": [{"task": "fashion", "model": "head_fashion"}]},
            {"name": "fashion_live_feature", "components": "live", "backbone": backbone,
             "heads": [{"task": "fashion", "model": "feature_identity"}]},
        ]
        before, sampled = _reloads(a), _sampled(a)
        atomic_write(a.config, config_text(cfg))
        wait_for("the reload", lambda: _reloads(a) == before + 1, timeout=60)
        assert _sampled(a) == sampled, "the reload restarted the sampler"

        client = grpcclient.InferenceServerClient(a.grpc)
        x = images("fashion", 8, seed=11)  # the test split: inputs no statistics saw
        z = grpc_infer(direct, BACKBONE, {IMAGE: x}, [FEATURE]).as_numpy(FEATURE).astype(np.float64)
        plain = reference_logits(direct, x, None, merged)
        for preference in ("fashion=1", "fashion=0.5,mnist=0.5"):
            # The corrected feature against W_p · z in float64, W_p from
            # calibrate solve on the merged file. The sidecar's product is
            # float32, with W_p rounded to float32: each value is off by at
            # most (D + 1) · 2^-24 · Σ_j |W_ij z_j| (Higham's bound for a
            # dot product of D terms, plus W_p's rounding), the bound here,
            # elementwise.
            w = solve_wp(str(merged), preference).astype(np.float64)
            want = z @ w.T
            bound = (len(w) + 1) * 2.0 ** -24 * (np.abs(z) @ np.abs(w).T)
            got = grpc_infer(client, "fashion_live_feature", {IMAGE: x}, ["CORRECTED"],
                             parameters={"react-preference": preference}).as_numpy("CORRECTED").astype(np.float64)
            assert np.abs(want - z).max() > 100 * bound.max(), f"{preference}: W_p is nearly the identity"
            excess = np.abs(got - want) / bound
            assert excess.max() <= 1, f"{preference}: the corrected feature is off by {excess.max():.3g} times the bound"
            print(f"fashion_live_feature {preference}: largest difference {np.abs(got - want).max():.3g}, "
                  f"{excess.max():.3g} of the float32 bound")
            # The logits, head(W_p · z) with the head on Triton: the
            # feature's error scaled by the head (20 times a cosine) stays
            # well under 1e-4 of the largest logit (measured: about 1e-7),
            # which still tells the merged file's W_p from the zoo file's
            # and from none.
            want = reference_logits(direct, x, preference, merged)
            zoo = reference_logits(direct, x, preference, ZOO / "components.safetensors")
            for other, what in ((plain, "no correction"), (zoo, "the zoo's components file")):
                assert np.abs(want - other).max() > 100 * 1e-4 * np.abs(want).max(), f"{preference}: W_p as {what}"
            got = grpc_infer(client, "fashion_live", {IMAGE: x}, [LOGITS], parameters={"react-preference": preference})
            assert_close(got.as_numpy(LOGITS), want, what=f"fashion_live {preference}")
            diff = np.abs(got.as_numpy(LOGITS).astype(np.float64) - want).max() / np.abs(want).max()
            print(f"fashion_live {preference}: largest difference {diff:.3g} of the largest logit")
        client.close()
        # Staleness now measured against the merged file, at its recorded error.
        samples = scrape(a.metrics)
        for task in TASKS:
            recorded = metric(samples, "react_staleness_recon_error_recorded", task=task)
            assert recorded == pytest.approx(float(meta[f"task.{task}.recon_error"]), rel=1e-12), task
    finally:
        direct.close()
        statuses = [s.stop() for s in sidecars]
    assert statuses == [0, 0], f"exit statuses {statuses}:\n" + "\n".join(s.log()[-2000:] for s in sidecars)


# Rows per phase of the drift test: 18 requests, 17 of them between the
# scrapes that bound the phase, 1,088 rows, past the rule's 1,000.
DRIFT_ROWS = 18 * CHUNK


def _features(client, x):
    """(z_mtl, z_ind) of fashion for images x, from Triton directly, in the
    chunks the sidecar's samples ran, as float64."""
    out = []
    for model in (BACKBONE, "expert_fashion"):
        z = [grpc_infer(client, model, {IMAGE: c}, [FEATURE]).as_numpy(FEATURE) for _, c in _chunks(model, x)]
        out.append(np.concatenate(z).astype(np.float64))
    return out


def _recon(w, zm, zi):
    """(Σ ‖W z_mtl − z_ind‖², Σ ‖z_ind‖²)."""
    return float(((zm @ w.T - zi) ** 2).sum()), float((zi ** 2).sum())


def _load_script(window):
    """Two scrapes ((Unix ms, samples) pairs) as a promqltest load script:
    `load <t1 - t0>ms`, then each of the sidecar's react_ series with its
    values at the two (_ where absent)."""
    (t0, first), (t1, last) = window
    series = {}
    for i, samples in enumerate((first, last)):
        for name, labels, v in samples:
            if name.startswith("react_"):
                key = name + "{" + ", ".join(f"{k}={json.dumps(x)}" for k, x in sorted(labels.items())) + "}"
                series.setdefault(key, ["_", "_"])[i] = repr(v)
    return f"load {t1 - t0}ms\n" + "".join(f"  {k} {' '.join(vs)}\n" for k, vs in sorted(series.items()))


def _alerts(alerteval, window, workdir):
    """The alerts of docker/prometheus-rules.yml active at a window's second
    scrape, evaluated by Prometheus' rule manager and engine (alerteval) at
    the window's two scrapes, as a Prometheus that scraped the sidecar then:
    [{"alert", "state", "labels", "annotations", "value", "active_at"}]."""
    workdir.mkdir()
    path = workdir / "window.load"
    path.write_text(_load_script(window))
    run = subprocess.run([str(alerteval), "-rules", str(RULES), "-series", str(path), str(window[0][0]),
                          str(window[1][0])], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"alerteval failed ({run.returncode}):\n{run.stderr}\n{path.read_text()}"
    return [json.loads(line) for line in run.stdout.splitlines()]


def _increase(first, last):
    """Prometheus' increase() of a counter sampled only at a window's two
    ends, evaluated at the second: the difference, extrapolated towards the
    range's start by half the window, or to the counter's zero if nearer."""
    d = last - first
    return d + min(d / 2, first)


def test_staleness_rises_with_drift_and_the_alert_fires(triton, calibrate, alerteval, tmp_path):
    # Fashion's correction, fitted on its whole calibration split (1,000
    # rows for D = 64: the recorded, in-sample, error is then close to a
    # fresh sample's; with 150 rows fresh fashion images sit at 2.3 times it).
    comps = _fit(calibrate, triton, {"fashion": calib_images("fashion", 1000)}, tmp_path)
    recorded = float(_metadata(comps)["task.fashion.recon_error"])
    w = solve_wp(str(comps), "fashion=1").astype(np.float64)  # Ŵ_t: the one-hot preference
    cfg = _config(triton, tmp_path / "live", "e2e-drift", tasks=["fashion"])
    cfg["sampling"]["min_samples"] = CHUNK
    cfg["components"] = [{"name": "fashion", "path": str(comps)}]
    fashion, mnist = images("fashion", DRIFT_ROWS, seed=21), images("mnist", DRIFT_ROWS, seed=21)
    direct = grpcclient.InferenceServerClient(triton[0])
    sidecar = _start(cfg, tmp_path)
    scrapes = []

    def take():
        scrapes.append((round(time.time() * 1000), scrape(sidecar.metrics)))
        return scrapes[-1][1]

    try:
        # The first request makes every series exist at the first scrape.
        _drive([sidecar], _chunks("fashion", fashion[:CHUNK]))
        take()
        _drive([sidecar], _chunks("fashion", fashion[CHUNK:]))
        after_fashion = take()
        _drive([sidecar], _chunks("fashion", mnist))  # another task's images, to the fashion model
        after_mnist = take()
        log = sidecar.log()
    finally:
        status = sidecar.stop()
        zf, zm = _features(direct, fashion), _features(direct, mnist)
        direct.close()
    assert status == 0, f"the sidecar exited with {status}:\n{log}"

    # The sidecar's numbers against numpy's: W from calibrate solve
    # (float32, so about 1e-7 relative in the error) on the same features.
    rf, tf = _recon(w, *zf)
    rm, tm = _recon(w, *zm)
    gauge = "react_staleness_recon_error"
    assert metric(after_fashion, gauge + "_recorded", task="fashion") == pytest.approx(recorded, rel=1e-12)
    assert metric(after_fashion, "react_staleness_rows", task="fashion") == DRIFT_ROWS
    live_fashion = metric(after_fashion, gauge, task="fashion")
    assert live_fashion == pytest.approx(rf / tf, rel=1e-5)
    live_all = metric(after_mnist, gauge, task="fashion")
    assert live_all == pytest.approx((rf + rm) / (tf + tm), rel=1e-5)
    residual = [metric(s, "react_staleness_residual_squares_total", task="fashion") for _, s in scrapes]
    target = [metric(s, "react_staleness_target_squares_total", task="fashion") for _, s in scrapes]
    drifted = (residual[2] - residual[1]) / (target[2] - target[1])
    assert drifted == pytest.approx(rm / tm, rel=1e-5)
    print(f"recorded {recorded:.4f}; live on fashion's test images {live_fashion:.4f} "
          f"({live_fashion / recorded:.2f}x); on mnist's sent to fashion {drifted:.4f} ({drifted / recorded:.2f}x)")
    # Near its recorded value without drift (fresh inputs sit somewhat
    # above the in-sample value), far above it with.
    assert 0.8 * recorded < live_fashion < 1.5 * recorded
    assert drifted > 2 * recorded and live_all > live_fashion

    # The shipped rules, evaluated by Prometheus on the two scrapes that
    # bound each phase: each is a window of more than 1,000 rows. Over the
    # fashion one ReactCorrectionStale stays quiet; over the drifted one its
    # expression holds, for task fashion (pending: its for: 1h is not waited
    # for, TestAlertRulesEvaluate in docker/deploytest checks it), with the
    # ratio of the counters' increases over the window, as Prometheus
    # extrapolates them from two samples.
    for i in (1, 2):
        rows = [metric(scrapes[j][1], "react_sampling_rows_total", task="fashion") for j in (i - 1, i)]
        assert rows[1] - rows[0] == DRIFT_ROWS - CHUNK * (i == 1), rows
    stale, writing = "ReactCorrectionStale", "ReactSamplingNotWriting"
    quiet = _alerts(alerteval, scrapes[0:2], tmp_path / "alerts-fashion")
    assert [a for a in quiet if a["alert"] == stale] == [], f"{stale} fired on fashion's own images: {quiet}"
    alerts = _alerts(alerteval, scrapes[1:3], tmp_path / "alerts-mnist")
    fired = [a for a in alerts if a["alert"] == stale]
    assert [(a["state"], a["labels"]) for a in fired] == [
        ("pending", {"alertname": stale, "severity": "warning", "task": "fashion"})], f"{stale}: {alerts}"
    want = _increase(residual[1], residual[2]) / _increase(target[1], target[2])
    assert fired[0]["value"] == pytest.approx(want, rel=1e-9)
    # The sidecar wrote no file (its checkpoint interval is an hour): the
    # other rule's expression holds too.
    assert metric(after_mnist, "react_sampling_last_checkpoint_timestamp_seconds") == 0
    assert [(a["state"], a["labels"]) for a in alerts if a["alert"] == writing] == [
        ("pending", {"alertname": writing, "severity": "warning"})], f"{writing}: {alerts}"
    print(f"{stale} over the drifted window: {fired[0]['value'] / recorded:.2f}x the recorded error "
          f"(extrapolated by Prometheus from the window's two scrapes)")
