"""Outcome feedback of A/B experiments (docs/sidecar.md, "Deciding an
experiment"), end to end through a real Triton with the official
tritonclient, over both protocols.

A sidecar of its own (started here, in front of the Triton of
scripts/test.sh) runs the zoo's experiment fashion-ab on fashion_ab (the
merged backbone against W_p for fashion=1, 50/50 by x-user-id) with a
join window of 64 requests, and a second experiment with a traffic share
on fashion. The test:

- sends fashion test images with keys over gRPC and HTTP, some with ids of
  their own, reads each one's arm (react-arm) and id (its own, echoed in
  the response's id; else react-request-id, a parameter and a header),
  checks the arm against experiment/assign.py and the served top-1 against
  the reference logits (backbone and head called on Triton, W_p from
  calibrate solve, float64), posts the true label over the other protocol
  (POST /v2/models/fashion_ab/feedback, or react.Feedback/ModelFeedback
  through a stub generated here from triton/proto/react_feedback.proto),
  and checks the answers, then the per-arm outcome counters on /metrics
  against what it sent, and `calibrate experiment report --metrics`' JSON
  against those counts (the sample ratio against scipy.stats.chisquare);
- unknown, duplicate, invalid and expired ids: 404/409/400/404, gRPC
  NOT_FOUND/ALREADY_EXISTS/INVALID_ARGUMENT/NOT_FOUND, counted by reason;
- the window's bound under load: 8 clients, 640 requests, the entries
  gauge never above max_entries, the evictions exactly what overflowed;
- a reload that renames an arm while requests wait for their outcomes:
  those count under the arm that served them, later ones under the new
  name;
- last, every metric the Grafana dashboard's queries name
  (docker/grafana/dashboards/react-sidecar.json) is on the sidecar's
  /metrics after this traffic (and a few cheap requests that trigger the
  rest), except the ones listed in NOT_TRIGGERED, with why.
"""

import collections
import concurrent.futures
import json
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from scipy import stats
from tritonclient.grpc import _utils as grpc_utils

from assign import assign  # experiment/assign.py
from export_calib import images as split_images  # tritonmodels/demo
from sidecar_helpers import (IMAGE, LOGITS, Sidecar, atomic_write, config_text, http_request, json_infer_body, metric,
                             reference_logits, scrape, sidecar_config, wait_for)
from testenv import ROOT, ZOO, binary, env, missing, zoo_data, zoo_split

EXPERIMENT = "fashion-ab"
ARMS = [("merged", 50), ("react", 50)]
ARM_PREFERENCE = {"merged": None, "react": "fashion=1"}
MODEL = "fashion_ab"
MAX_ENTRIES = 64
CLASSES = 10  # the fashion head's logits
COMPONENTS = ZOO / "components.safetensors"
DASHBOARD = ROOT / "docker" / "grafana" / "dashboards" / "react-sidecar.json"

# The dashboard's metrics this test does not make the sidecar export, and
# why: each would take a setup of its own far costlier than the check.
NOT_TRIGGERED = {
    "react_tls_certificate_not_after_timestamp_seconds": "TLS is off (tests/test_sidecar_tls.py serves it)",
    "react_tls_reloads_total": "TLS is off",
    "react_wp_solve_errors_total": "needs a components file whose C_p is not positive definite",
    "react_wp_solves_cancelled_total": "needs a solve whose every waiter leaves before it runs (a race)",
    "react_experiment_shadow_skipped_total": "needs a comparison skipped (all slots busy, or a timeout: a race)",
}


# ---------------------------------------------------------------- the sidecar


def _config(triton_grpc, triton_http, arms=ARMS):
    import types
    triton = types.SimpleNamespace(grpc=triton_grpc, http=triton_http)
    model = {"components": "zoo", "backbone": {"model": "backbone_adamerging", "output": "feature"},
             "heads": [{"task": "fashion", "model": "head_fashion"}]}
    models = [{"name": MODEL, **model}, {"name": "fashion", **model}]
    experiments = [
        {"name": EXPERIMENT, "models": [MODEL], "key": {"header": "x-user-id", "parameter": "user_id"},
         "arms": [{"name": a, "weight": w, "preference": ARM_PREFERENCE[a] or "none"} for a, w in arms],
         # Every request served with an arm also compared with the other
         # arm, so that the dashboard's shadow metrics are served.
         "shadow": {"fraction": 1, "max_concurrent": 4}},
        # Half the keys take part: the others are counted as excluded.
        {"name": "share", "models": ["fashion"], "key": {"header": "x-user-id"}, "traffic": 0.5,
         "arms": [{"name": "only", "weight": 1, "preference": "fashion=1"}]},
    ]
    return sidecar_config(
        triton, {"zoo": (COMPONENTS, None)}, models, experiments=experiments,
        feedback={"max_entries": MAX_ENTRIES, "max_age": "10m"},
        # Small enough that the last test can make the W_p cache evict, the
        # admission shed a key's second new preference, and the listener
        # refuse a connection, cheaply.
        cache={"size": 2},
        admission={"key_header": "x-client", "key_rate": 0.001, "key_burst": 1},
        server={"max_connections": 48},
    )


@pytest.fixture(scope="module")
def side(tmp_path_factory):
    if not COMPONENTS.is_file():
        missing(f"{COMPONENTS} is missing: the zoo is not built (make zoo)")
    zoo_split("fashion", "test")
    tmp = tmp_path_factory.mktemp("feedback")
    path = tmp / "sidecar.yaml"
    path.write_text(config_text(_config(env("TRITON_GRPC_ADDR"), env("TRITON_HTTP_ADDR"))))
    s = Sidecar(path, tmp).start()
    s.config_path = path
    yield s
    s.stop()


@pytest.fixture(scope="module")
def triton():
    c = grpcclient.InferenceServerClient(env("TRITON_GRPC_ADDR"))
    yield c
    c.close()


@pytest.fixture(scope="module")
def feedback_pb(tmp_path_factory):
    """react_feedback_pb2, generated from triton/proto/react_feedback.proto
    with protoc (make setup installs it)."""
    protoc = shutil.which("protoc")
    if protoc is None:
        missing("protoc is missing: run make setup (scripts/setup.d/05-protoc.sh)")
    out = tmp_path_factory.mktemp("pb")
    run = subprocess.run([protoc, f"-I{ROOT / 'triton' / 'proto'}", f"--python_out={out}", "react_feedback.proto"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    sys.path.insert(0, str(out))
    import react_feedback_pb2
    return react_feedback_pb2


@pytest.fixture(scope="module")
def fashion():
    """The fashion test split: images and labels, in a seeded order."""
    x, y = split_images(zoo_data(), "fashion", "test")
    order = np.random.default_rng(25).permutation(len(x))
    return x[order], y[order]


# ---------------------------------------------------------------- clients


class Client:
    """Inference with tritonclient (gRPC or HTTP) and feedback over both
    protocols, against one sidecar."""

    def __init__(self, side, pb):
        self.side, self.pb = side, pb
        self.grpc = grpcclient.InferenceServerClient(side.grpc)
        self.http = httpclient.InferenceServerClient(side.http)
        self.channel = grpc.insecure_channel(side.grpc)
        self.model_feedback = self.channel.unary_unary(
            "/react.Feedback/ModelFeedback", request_serializer=pb.ModelFeedbackRequest.SerializeToString,
            response_deserializer=pb.ModelFeedbackResponse.FromString)

    def close(self):
        self.grpc.close()
        self.http.close()
        self.channel.close()

    def infer(self, protocol, x, key=None, request_id="", headers=None, model=MODEL):
        """(logits, arm or None, the id to report under, response id, react-request-id parameter)."""
        module = grpcclient if protocol == "grpc" else httpclient
        client = self.grpc if protocol == "grpc" else self.http
        inp = module.InferInput(IMAGE, list(x.shape), "FP32")
        inp.set_data_from_numpy(np.ascontiguousarray(x))
        headers = dict(headers or {})
        if key is not None:
            headers["x-user-id"] = key
        r = client.infer(model, [inp], request_id=request_id, headers=headers or None)
        if protocol == "grpc":
            resp = r.get_response()
            params = {k: v.string_param for k, v in resp.parameters.items()}
            response_id = resp.id
        else:
            resp = r.get_response()
            params = resp.get("parameters", {})
            response_id = resp.get("id", "")
        assigned = params.get("react-request-id")
        return r.as_numpy(LOGITS), params.get("react-arm"), request_id or assigned, response_id, assigned

    def label(self, protocol, rid, label, model=MODEL):
        """(status: HTTP status or gRPC code name, answer dict or error message)."""
        if protocol == "grpc":
            try:
                resp = self.model_feedback(self.pb.ModelFeedbackRequest(model_name=model, id=rid, label=int(label)), timeout=30)
            except grpc.RpcError as err:
                return err.code().name, err.details()
            return "OK", {"model_name": resp.model_name, "id": resp.id, "experiment": resp.experiment, "arm": resp.arm,
                          "kind": resp.kind, "task": resp.task, "score": resp.score}
        status, _, body = http_request(self.side.http, "POST", f"/v2/models/{model}/feedback",
                                       json.dumps({"id": rid, "label": int(label)}).encode(), {"Content-Type": "application/json"})
        answer = json.loads(body)
        return status, answer if status == 200 else answer["error"]


@pytest.fixture(scope="module")
def client(side, feedback_pb):
    c = Client(side, feedback_pb)
    yield c
    c.close()


OK = {"grpc": "OK", "http": 200}
NOT_FOUND = {"grpc": "NOT_FOUND", "http": 404}
ALREADY = {"grpc": "ALREADY_EXISTS", "http": 409}
INVALID = {"grpc": "INVALID_ARGUMENT", "http": 400}
OTHER = {"grpc": "http", "http": "grpc"}


def _counters(samples, arm):
    labels = dict(model=MODEL, experiment=EXPERIMENT, arm=arm, kind="label", task="fashion")
    return (metric(samples, "react_experiment_outcomes_total", **labels),
            metric(samples, "react_experiment_outcome_score_total", **labels),
            metric(samples, "react_experiment_outcome_score_squares_total", **labels))


# ---------------------------------------------------------------- the tests


def test_ids(side, client, fashion):
    """A request with its own id is answered as Triton answers it (the id
    echoed, nothing added); one without gets react-request-id, 32 hex
    digits, in a parameter and a header, and no id field; a request
    served without an arm gets none."""
    x, _ = fashion
    for protocol in ("grpc", "http"):
        _, arm, rid, response_id, assigned = client.infer(protocol, x[:1], key="ids-1", request_id=f"own-{protocol}")
        assert arm == assign(EXPERIMENT, "ids-1", ARMS)
        assert (rid, response_id, assigned) == (f"own-{protocol}", f"own-{protocol}", None)
        _, arm, rid, response_id, assigned = client.infer(protocol, x[:1], key="ids-2")
        assert arm == assign(EXPERIMENT, "ids-2", ARMS)
        assert re.fullmatch(r"[0-9a-f]{32}", assigned or ""), assigned
        assert rid == assigned and response_id == ""
        # An override: no arm, nothing recorded, no id.
        _, arm, _, _, assigned = client.infer(protocol, x[:1], key="ids-2", headers={"react-preference": "mnist=1"})
        assert arm is None and assigned is None
    # The header: HTTP's, from a raw request; gRPC's header metadata, from
    # tritonclient's own request through its stub.
    status, headers, body = http_request(side.http, "POST", f"/v2/models/{MODEL}/infer", json_infer_body({IMAGE: x[:1]}),
                                         {"Content-Type": "application/json", "X-User-Id": "ids-3"})
    assert status == 200, body
    answer = json.loads(body)
    assert headers["react-request-id"] == answer["parameters"]["react-request-id"] and "id" not in answer
    assert headers["react-arm"] == assign(EXPERIMENT, "ids-3", ARMS)
    inp = grpcclient.InferInput(IMAGE, [1, *x.shape[1:]], "FP32")
    inp.set_data_from_numpy(np.ascontiguousarray(x[:1]))
    req = grpc_utils._get_inference_request(model_name=MODEL, inputs=[inp], model_version="", request_id="", outputs=None,
                                            sequence_id=0, sequence_start=False, sequence_end=False, priority=0,
                                            timeout=None, parameters=None)
    resp, call = client.grpc._client_stub.ModelInfer.with_call(req, metadata=(("x-user-id", "ids-4"),), timeout=60)
    md = dict(call.initial_metadata())
    assert md["react-request-id"] == resp.parameters["react-request-id"].string_param and resp.id == ""
    assert md["react-arm"] == assign(EXPERIMENT, "ids-4", ARMS)


def test_outcomes_per_arm_and_report(side, client, triton, fashion, tmp_path):
    """Labels joined to the arm that served each request, counted per arm
    as the test counts them; calibrate experiment report reads the same."""
    x, y = fashion
    n = 192
    before = scrape(side.metrics)
    served = []  # (i, protocol, arm, id, top-1)
    sent = collections.defaultdict(lambda: [0, 0])  # arm -> [outcomes, matched]
    recorded = collections.Counter()

    def report(batch):
        for i, protocol, arm, rid, top1 in batch:
            label = int(y[i])
            status, answer = client.label(OTHER[protocol], rid, label)
            want = {"model_name": MODEL, "id": rid, "experiment": EXPERIMENT, "arm": arm, "kind": "label",
                    "task": "fashion", "score": float(top1 == label)}
            assert status == OK[OTHER[protocol]] and answer == want, (i, status, answer, want)
            sent[arm][0] += 1
            sent[arm][1] += int(top1 == label)

    # In batches of 32, each reported before the window (64) could lose it.
    for start in range(0, n, 32):
        batch = []
        for i in range(start, start + 32):
            protocol = ("grpc", "http")[i % 2]
            key = f"user-{i}"
            own = f"req-{i}" if i % 3 == 0 else ""
            logits, arm, rid, _, _ = client.infer(protocol, x[i:i + 1], key=key, request_id=own)
            assert arm == assign(EXPERIMENT, key, ARMS), key
            batch.append((i, protocol, arm, rid, int(logits.argmax())))
            served.append(batch[-1])
            recorded[arm] += 1
        report(batch)

    # The served top-1 against the reference logits, per arm in one batch.
    for arm in ("merged", "react"):
        rows = [s for s in served if s[2] == arm]
        ref = reference_logits(triton, x[[s[0] for s in rows]], ARM_PREFERENCE[arm], COMPONENTS)
        top2 = np.sort(ref, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 1e-3 * np.abs(ref).max()
        got = np.array([s[4] for s in rows])
        assert (got[clear] == ref.argmax(1)[clear]).all(), arm
        assert clear.sum() >= 0.9 * len(rows)

    after = scrape(side.metrics)
    for arm in ("merged", "react"):
        got = np.subtract(_counters(after, arm), _counters(before, arm))
        assert tuple(got) == (sent[arm][0], sent[arm][1], sent[arm][1]), (arm, got, sent[arm])
        rec = metric(after, "react_experiment_feedback_recorded_total", model=MODEL, arm=arm) - \
            metric(before, "react_experiment_feedback_recorded_total", model=MODEL, arm=arm)
        assert rec == recorded[arm], arm
    assert min(sent[a][0] for a in sent) > 60, sent

    # The report, from the sidecar's own /metrics page: its counts are the
    # counters' (everything this module's sidecar counted so far).
    run = subprocess.run([str(binary("calibrate")), "experiment", "report", "--experiment", EXPERIMENT,
                          "--arms", "merged=50,react=50", "--metrics", f"http://{side.metrics}/metrics", "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    r = json.loads(run.stdout)
    assert r["experiment"] == EXPERIMENT and r["kind"] == "label" and r["control"] == "merged"
    arms = {a["name"]: a for a in r["arms"]}
    counts = []
    for arm in ("merged", "react"):
        n_arm, s_arm, q_arm = _counters(after, arm)
        a = arms[arm]
        assert (a["n"], a["sum"], a["sum_squares"]) == (n_arm, s_arm, q_arm), (arm, a)
        assert abs(a["mean"] - s_arm / n_arm) < 1e-12
        assert a["lower"] <= a["mean"] <= a["upper"]
        counts.append(n_arm)
    chi2, p = stats.chisquare(counts, [sum(counts) / 2] * 2)
    assert abs(r["sample_ratio"]["chi_square"] - chi2) < 1e-9 and abs(r["sample_ratio"]["p_value"] - p) < 1e-9
    assert r["decision"]


def test_rejections(side, client, fashion):
    """Unknown, duplicate, invalid and expired ids over both protocols,
    each answered with its status and counted by its reason."""
    x, _ = fashion
    before = scrape(side.metrics)
    sent = collections.Counter()
    for protocol in ("grpc", "http"):
        assert client.label(protocol, "never-served", 1)[0] == NOT_FOUND[protocol]
        sent["unknown"] += 1
        logits, _, rid, _, _ = client.infer(protocol, x[:1], key="rej-1")
        top1 = int(logits.argmax())
        status, msg = client.label(protocol, rid, CLASSES)  # a class beyond the output's
        assert status == INVALID[protocol] and "class" in msg, msg
        sent["invalid"] += 1
        assert client.label(protocol, rid, top1)[0] == OK[protocol]  # still joinable
        status, msg = client.label(protocol, rid, top1)
        assert status == ALREADY[protocol] and "already" in msg, msg
        sent["duplicate"] += 1
        # Expired: MAX_ENTRIES newer requests push it out.
        _, _, rid, _, _ = client.infer(protocol, x[:1], key="rej-2")
        for i in range(MAX_ENTRIES):
            client.infer(protocol, x[:1], key=f"rej-fill-{i}")
        status, msg = client.label(protocol, rid, 0)
        assert status == NOT_FOUND[protocol] and "too late" in msg, msg
        sent["expired"] += 1
    after = scrape(side.metrics)
    for reason in ("unknown", "invalid", "duplicate", "expired"):
        got = metric(after, "react_experiment_feedback_rejected_total", reason=reason) - \
            metric(before, "react_experiment_feedback_rejected_total", reason=reason)
        assert got == sent[reason], reason


def test_window_bound_under_load(side, fashion):
    """8 clients, 640 requests with an arm and no feedback: the window never
    holds more than max_entries, and what overflowed is counted evicted."""
    x, _ = fashion
    before = scrape(side.metrics)
    entries_before = metric(before, "react_experiment_feedback_window_entries")
    assert metric(before, "react_experiment_feedback_window_capacity") == MAX_ENTRIES
    peak = [entries_before]
    stop = []

    def watch():
        while not stop:
            peak.append(metric(scrape(side.metrics), "react_experiment_feedback_window_entries"))

    def load(w):
        c = (grpcclient if w % 2 == 0 else httpclient).InferenceServerClient(side.grpc if w % 2 == 0 else side.http)
        module = grpcclient if w % 2 == 0 else httpclient
        inp = module.InferInput(IMAGE, [1, *x.shape[1:]], "FP32")
        inp.set_data_from_numpy(np.ascontiguousarray(x[w:w + 1]))
        for i in range(80):
            c.infer(MODEL, [inp], headers={"x-user-id": f"load-{w}-{i}"})
        c.close()

    with concurrent.futures.ThreadPoolExecutor(9) as pool:
        watcher = pool.submit(watch)
        list(pool.map(load, range(8)))
        stop.append(True)
        watcher.result()
    after = scrape(side.metrics)
    assert max(peak) <= MAX_ENTRIES and len(peak) > 2, peak
    recorded = metric(after, "react_experiment_feedback_recorded_total") - metric(before, "react_experiment_feedback_recorded_total")
    evicted = metric(after, "react_experiment_feedback_dropped_total", reason="evicted") - \
        metric(before, "react_experiment_feedback_dropped_total", reason="evicted")
    assert recorded == 640
    assert metric(after, "react_experiment_feedback_window_entries") == MAX_ENTRIES
    assert evicted == entries_before + recorded - MAX_ENTRIES


def test_reload_keeps_the_window(side, client, fashion):
    """A reload renames arm react while requests wait for their outcomes:
    theirs count under the arm that served them, the next requests' under
    the new name."""
    x, y = fashion
    before = scrape(side.metrics)
    waiting = []
    for i in range(24):
        key = f"reload-{i}"
        logits, arm, rid, _, _ = client.infer(("grpc", "http")[i % 2], x[i:i + 1], key=key)
        assert arm == assign(EXPERIMENT, key, ARMS)
        waiting.append((i, arm, rid, int(logits.argmax())))
    renamed = [("merged", 50), ("fashion1", 50)]
    ARM_PREFERENCE["fashion1"] = "fashion=1"
    reloads = metric(scrape(side.metrics), "react_config_reloads_total", result="success")
    cfg = _config(env("TRITON_GRPC_ADDR"), env("TRITON_HTTP_ADDR"), arms=renamed)
    atomic_write(side.config_path, config_text(cfg))
    wait_for("the reload", lambda: metric(scrape(side.metrics), "react_config_reloads_total", result="success") > reloads, timeout=60)
    sent = collections.defaultdict(lambda: [0, 0])
    for i, arm, rid, top1 in waiting:
        status, answer = client.label(("http", "grpc")[i % 2], rid, int(y[i]))
        assert status in (200, "OK") and answer["arm"] == arm, (status, answer)
        sent[arm][0] += 1
        sent[arm][1] += int(top1 == int(y[i]))
    for i in range(24, 48):
        key = f"reload-{i}"
        logits, arm, rid, _, _ = client.infer("grpc", x[i:i + 1], key=key)
        assert arm == assign(EXPERIMENT, key, renamed)  # the same stretch of keys, its new name
        status, answer = client.label("http", rid, int(y[i]))
        assert status == 200 and answer["arm"] == arm
        sent[arm][0] += 1
        sent[arm][1] += int(int(logits.argmax()) == int(y[i]))
    after = scrape(side.metrics)
    assert set(sent) == {"merged", "react", "fashion1"}, sent
    for arm, (n, matched) in sent.items():
        got = np.subtract(_counters(after, arm), _counters(before, arm))
        assert tuple(got) == (n, matched, matched), (arm, got)


def test_dashboard_metrics_are_served(side, client, fashion):
    """Every metric the dashboard's queries name is on /metrics after the
    traffic above and a few cheap requests that trigger the rest (an
    excluded key, a malformed body, a bad preference, new preferences past
    the cache and the key rate, connections past the cap, a SIGHUP); but
    those of NOT_TRIGGERED."""
    x, _ = fashion
    keys = [f"share-{i}" for i in range(8)]
    assert any(assign("share", k, [("only", 1)], 0.5) is None for k in keys)
    for k in keys:  # traffic 0.5: some keys are excluded
        client.infer("grpc", x[:1], key=k, model="fashion")
    # Refused before Triton, with Triton's own status for the JSON it cannot parse.
    status, _, _ = http_request(side.http, "POST", "/v2/models/fashion/infer", b'{"inputs": [', {"Content-Type": "application/json"})
    assert status >= 400
    with pytest.raises(Exception):
        client.infer("grpc", x[:1], model="fashion", headers={"react-preference": "nosuchtask=1"})
    for i, pref in enumerate(["fashion=0.9,mnist=0.1", "fashion=0.8,mnist=0.2", "fashion=0.7,mnist=0.3"]):
        client.infer("grpc", x[:1], model="fashion", headers={"react-preference": pref, "x-client": f"c{i}"})
    with pytest.raises(Exception):  # the same client's second new preference: shed
        client.infer("grpc", x[:1], model="fashion", headers={"react-preference": "fashion=0.6,mnist=0.4", "x-client": "c0"})
    host, port = side.http.rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(60)]  # past server.max_connections
    try:
        wait_for("a connection refused", lambda: metric(scrape(side.metrics), "react_connections_refused_total", listener="http") > 0)
    finally:
        for s in socks:
            s.close()
    reloads = metric(scrape(side.metrics), "react_config_reloads_total")
    side.proc.send_signal(signal.SIGHUP)
    wait_for("the SIGHUP reload", lambda: metric(scrape(side.metrics), "react_config_reloads_total") > reloads, timeout=60)

    served = set()
    for name, _, _ in scrape(side.metrics):
        served.add(name)
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                served.add(name[: -len(suffix)])
    wanted = set()
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t.get("expr", "") for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"].get("query", "") for v in dashboard.get("templating", {}).get("list", []) if isinstance(v.get("query"), dict)]
    for expr in exprs:
        for m in re.findall(r"\breact_[a-z0-9_]+", expr):
            for suffix in ("_bucket", "_sum", "_count"):
                if m.endswith(suffix) and (m[: -len(suffix)].endswith("_seconds") or m[: -len(suffix)].endswith("_confidence")):
                    m = m[: -len(suffix)]
            wanted.add(m)
    assert len(wanted) > 20, wanted
    assert set(NOT_TRIGGERED) <= wanted, set(NOT_TRIGGERED) - wanted  # the list stays current
    missing_now = sorted(wanted - served - set(NOT_TRIGGERED))
    assert not missing_now, f"the dashboard queries metrics the sidecar does not export: {missing_now}"
