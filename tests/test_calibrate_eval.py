"""`calibrate eval` end to end, against the real Triton of scripts/test.sh
serving the demo zoo (tritonmodels/repo).

A reduced evaluation (three tasks, a seeded random 200 test images each, the
equal, priority and one-hot preferences, the shipped AdaMerging components)
runs through Triton; the test then checks it against an independent
computation on the same embeddings: the backbone's and the experts' features
of the same images fetched from Triton with tritonclient, W_p in numpy
float64 from the components file's S_t, G_t, W_orth_t and β, the heads run
with onnxruntime on the zoo's ONNX files, and HV and U recomputed in Python
(inclusion-exclusion, not WFG). It also checks that the corrected model
beats the uncorrected one on the tasks a preference favours.

Needs TRITON_GRPC_ADDR, the zoo models loaded in that Triton, the zoo data
(.cache/zoo-data, or ZOO_DATA) and go; without them it skips, or fails when
REACT_E2E=1.
"""

import itertools
import json
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
from safetensors import safe_open
from safetensors.numpy import load_file

from testenv import ZOO, env, manifest, need_models, zoo_split

COMPONENTS = ZOO / "components.safetensors"
BACKBONE = "backbone_adamerging"
TASKS = ["fashion", "mnist", "digits"]
N = 200
BATCH = 256


@pytest.fixture(scope="module")
def triton_addr(triton_addr):
    """The Triton of scripts/test.sh, serving the backbone, experts and heads."""
    need_models(triton_addr, [BACKBONE] + [f"{k}_{t}" for t in TASKS for k in ("expert", "head")])
    return triton_addr


def _infer(client, model, x, inp, out):
    parts = []
    for i in range(0, len(x), BATCH):
        t = grpcclient.InferInput(inp, list(x[i:i + BATCH].shape), "FP32")
        t.set_data_from_numpy(np.ascontiguousarray(x[i:i + BATCH], dtype=np.float32))
        parts.append(client.infer(model, [t], outputs=[grpcclient.InferRequestedOutput(out)]).as_numpy(out))
    return np.concatenate(parts)


def _head(task, z):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(ZOO / manifest()["files"][f"head_{task}"]["path"]), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: z.astype(np.float32)})[0]


def _hypervolume(points):
    """Volume dominated by points above the origin, by inclusion-exclusion."""
    pts = [np.maximum(np.asarray(p, float), 0) for p in points]
    total = 0.0
    for k in range(1, len(pts) + 1):
        for subset in itertools.combinations(pts, k):
            total += (-1) ** (k + 1) * float(np.prod(np.min(subset, axis=0)))
    return total


def _uniformity(a, p):
    s = np.asarray(p) * np.maximum(0.0, 1 - np.asarray(a))
    if s.sum() == 0:
        return 1.0
    s = s / s.sum()
    nz = s > 0
    return 1 - float(np.sum(s[nz] * np.log(len(s) * s[nz])))


def test_eval_matches_an_independent_computation(triton_addr, calibrate, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    images, labels = {}, {}
    for task in TASKS:
        path = zoo_split(task, "test")
        with np.load(path) as f:
            pick = np.sort(np.random.default_rng(1).choice(len(f["y"]), size=N, replace=False))
            images[task] = (f["x"][pick].astype(np.float32) / 255)[:, None]
            labels[task] = f["y"][pick].astype(np.int64)
        np.save(data / f"{task}.npy", images[task])
        np.save(data / f"{task}.labels.npy", labels[task])
    out = tmp_path / "eval.json"
    run = subprocess.run([str(calibrate), "eval", "--triton", triton_addr, "--data", str(data),
                          "--components", f"AdaMerging={COMPONENTS}", "--tasks", ",".join(TASKS),
                          "--set", "equal", "--set", "priority", "--set", "one-hot",
                          "--json", str(out), "--progress", "never"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| ReACT AdaMerging | β=0.1 sum | equal |" in run.stdout
    res = json.loads(out.read_text())
    assert res["tasks"] == TASKS and res["samples"] == [N] * len(TASKS)

    # The same embeddings, from Triton through tritonclient.
    client = grpcclient.InferenceServerClient(url=triton_addr)
    try:
        z = {t: _infer(client, BACKBONE, images[t], "image", "feature").astype(np.float64) for t in TASKS}
        ze = {t: _infer(client, f"expert_{t}", images[t], "image", "feature") for t in TASKS}
    finally:
        client.close()
    tensors = load_file(str(COMPONENTS))
    with safe_open(str(COMPONENTS), framework="numpy") as f:
        meta = f.metadata()
    assert meta["normalization"] == "sum"
    beta, d = float(meta["beta"]), int(meta["d"])

    def acc(task, feats):
        return float((_head(task, feats).argmax(1) == labels[task]).mean())

    def w_p(p):
        a = sum(p[t] * (tensors[f"{t}.S"] + beta * tensors[f"{t}.W_orth"]) for t in TASKS)
        c = sum(p[t] * (tensors[f"{t}.G"] + beta * np.eye(d)) for t in TASKS)
        return np.linalg.solve(c.T, a.T).T  # W C = A

    individual = [acc(t, ze[t]) for t in TASKS]
    merged = [acc(t, z[t]) for t in TASKS]
    cells = differ = 0
    rows = {}
    for row in res["rows"]:
        if row["method"] == "individual":
            want = individual
        elif row["method"] == "merged":
            want = merged
        elif row["label"].startswith("one-hot, each"):
            continue
        else:
            w = w_p(dict(zip(TASKS, row["preference"])))
            want = [acc(t, z[t] @ w.T) for t in TASKS]
        rows[(row["method"], row["label"])] = row
        for got, exp in zip(row["accuracy"], want):
            # float32 against float64 may flip a near tie: one image at most.
            assert abs(got - exp) <= 1 / N + 1e-12, f"{row['label']}: {row['accuracy']} against {want}"
            cells += 1
            differ += got != exp
        np.testing.assert_allclose(row["normalized"], np.array(row["accuracy"]) / np.array(individual), rtol=0, atol=1e-12)
    # individual, merged, equal, 3 priority and 3 one-hot rows.
    assert cells == 9 * len(TASKS) and differ <= cells // 20, f"{differ} of {cells} accuracies differ by one image"

    # The tasks a preference favours gain over the uncorrected backbone.
    for i, t in enumerate(TASKS):
        one_hot = rows[("react", f"{t}=1")]["accuracy"][i]
        prio = next(r for (m, label), r in rows.items() if m == "react" and label.startswith(f"{t}=0.5"))["accuracy"][i]
        assert one_hot > merged[i] and prio > merged[i], f"{t}: one-hot {one_hot}, priority {prio}, merged {merged[i]}"

    # HV and U of each set, recomputed from the rows.
    for s in res["summaries"]:
        if s["method"] == "merged":
            continue
        pts = [r for r in res["rows"] if r["method"] == s["method"] and r.get("set") == s["set"]
               and not r["label"].startswith("one-hot, each")]
        norm = [r["normalized"] for r in pts]
        assert abs(_hypervolume(norm) - s["hv_T"]) < 1e-12
        us = [_uniformity(r["normalized"], r["preference"]) for r in pts if sum(w > 0 for w in r["preference"]) >= 2]
        if us:
            assert abs(np.mean(us) - s["u_T"]) < 1e-12
        else:
            assert "u_T" not in s


SIDECAR_N = 100


def test_eval_through_the_sidecar_matches_the_evaluation(triton_addr, calibrate, tmp_path):
    """`calibrate eval --sidecar`: each task's images through the sidecar's
    controllable model (tritonmodels/zoo/sidecar.yaml: fashion, mnist and
    digits correct backbone_adamerging with components.safetensors), at
    each preference in the react-preference header, give the logits and
    accuracies evaluated in process; and a sidecar model that is not the
    task's fails the check."""
    sidecar = env("SIDECAR_GRPC_ADDR")
    data = tmp_path / "data"
    data.mkdir()
    for task in TASKS:
        path = zoo_split(task, "test")
        with np.load(path) as f:
            pick = np.sort(np.random.default_rng(2).choice(len(f["y"]), size=SIDECAR_N, replace=False))
            np.save(data / f"{task}.npy", (f["x"][pick].astype(np.float32) / 255)[:, None])
            np.save(data / f"{task}.labels.npy", f["y"][pick].astype(np.int64))
    base = [str(calibrate), "eval", "--triton", triton_addr, "--sidecar", sidecar, "--data", str(data),
            "--components", f"AdaMerging={COMPONENTS}", "--progress", "never"]
    out = tmp_path / "eval.json"
    run = subprocess.run([*base, "--tasks", ",".join(TASKS), "--set", "equal", "--set", "one-hot",
                          "--set", "pairwise:fashion,mnist:3", "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "served through the sidecar" in run.stderr
    res = json.loads(out.read_text())
    served = res["served"]
    # none, equal, 3 one-hot and 3 pairwise points, for each task.
    assert len(served) == 8 * len(TASKS)
    third = "0.3333333333333333"
    assert [c["header"] for c in served[:8]] == [
        "none", f"fashion={third},mnist={third},digits={third}",
        "fashion=1", "mnist=1", "digits=1", "fashion=1", "fashion=0.5,mnist=0.5", "mnist=1"]
    rows = {(r["method"], r.get("set", ""), r["label"]): r for r in res["rows"]}
    for c in served:
        i = TASKS.index(c["task"])
        assert c["model"] == c["task"]
        # The logits agree to float rounding (the sidecar may apply W_p in
        # its factored float64 form), and so do the predictions.
        assert c["max_logit_diff"] <= 1e-4 * c["max_logit"], c
        assert c["served_accuracy"] == c["evaluated_accuracy"] and c["predictions_differ"] == 0, c
        row = rows[("merged", "", "none (no correction)")] if c["header"] == "none" else rows[("react", c["set"], c["label"])]
        assert c["evaluated_accuracy"] == row["accuracy"][i], (c, row)
    # The header took effect: each task's own one-hot preference serves it
    # better than no correction.
    for t in TASKS:
        none = next(c for c in served if c["task"] == t and c["header"] == "none")
        own = next(c for c in served if c["task"] == t and c.get("set") == "one-hot" and c["header"] == f"{t}=1")
        assert own["served_accuracy"] > none["served_accuracy"], (t, own, none)

    # Every task sent to the digits model: fashion's logits are not what
    # was evaluated, and eval says so.
    bad = subprocess.run([*base, "--tasks", "fashion,digits", "--set", "equal", "--sidecar-model", "digits"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "what is served differs from what was evaluated" in bad.stderr
    assert "task fashion, model digits" in bad.stderr and "task digits," not in bad.stderr, bad.stderr
