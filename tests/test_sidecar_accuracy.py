"""The zoo through the ReACT sidecar on its whole test sets, and the shipped
components files against a fresh calibration.

Both run against the Triton and the sidecar of scripts/test.sh (zoo
configuration tritonmodels/zoo/sidecar.yaml): TRITON_GRPC_ADDR and
SIDECAR_GRPC_ADDR. Without them they skip, or fail when REACT_E2E=1.
"""
import json
import re
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

from testenv import ROOT, ZOO, env, zoo_data

PY = sys.executable


def test_shipped_components_match_a_fresh_calibration(tmp_path):
    """tritonmodels/zoo/components*.safetensors are what
    scripts/zoo-components.sh computes now, on the served models: the same
    tasks, N_t and metadata, and the same statistics to float tolerance (the
    features are computed in float32 by onnxruntime, whose kernels may round
    differently on another CPU)."""
    triton = env("TRITON_GRPC_ADDR")
    subprocess.run(["scripts/zoo-components.sh", "--triton", triton, "--out", str(tmp_path)],
                   cwd=ROOT, check=True, capture_output=True)
    for name in ("components.safetensors", "components_ta.safetensors"):
        shipped, fresh = load_file(ZOO / name), load_file(tmp_path / name)
        assert sorted(shipped) == sorted(fresh), name
        for key, want in shipped.items():
            got = fresh[key]
            scale = max(float(np.abs(want).max()), 1e-30)
            diff = float(np.abs(got - want).max()) / scale
            # S and G are sums over up to 1040 float32 features; W_orth comes
            # from their SVD.
            assert diff < 1e-4, f"{name} {key}: max relative difference {diff:.2e}"
        meta_shipped = _metadata(ZOO / name)
        meta_fresh = _metadata(tmp_path / name)
        for key in meta_shipped:
            if key in ("sha256", "crc32c", "metadata_sha256"):
                continue
            assert meta_fresh[key] == meta_shipped[key], f"{name} metadata {key}"


def _metadata(path):
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        return f.metadata()


def test_accuracy_through_the_sidecar(calibrate, tmp_path):
    """On the zoo's whole test sets, `calibrate eval --sidecar` (what
    scripts/demo.sh runs) sends each task's images to its controllable model
    with the preference in a header, for the AdaMerging and TA backbones and
    the shipped components files. Independently of eval's own summary, from
    the served accuracies of its JSON: every one-hot preference and the
    equal one beat the uncorrected merged backbone on their p-weighted
    accuracy, and the priority ones on average (a single priority point that
    falls short is reported, not failed: on this zoo's TA backbone
    fashion=0.5 does, docs/demo-results.md); eval's "beats merged" counts
    agree. And the tables recorded in docs/demo-results.md are this
    evaluation's."""
    sidecar, triton = env("SIDECAR_GRPC_ADDR"), env("TRITON_GRPC_ADDR")
    data = tmp_path / "test"
    export = subprocess.run([PY, "tritonmodels/demo/export_calib.py", "--split", "test", "--data", str(zoo_data()),
                             "--out", str(data)], cwd=ROOT, capture_output=True, text=True)
    assert export.returncode == 0, export.stdout + export.stderr
    md, out = tmp_path / "results.md", tmp_path / "results.json"
    run = subprocess.run([str(calibrate), "eval", "--triton", triton, "--sidecar", sidecar, "--data", str(data),
                          "--components", f"AdaMerging={ZOO / 'components.safetensors'}",
                          "--components", f"TA={ZOO / 'components_ta.safetensors'}",
                          "--sidecar-model", "AdaMerging={task}", "--sidecar-model", "TA={task}_ta",
                          "--set", "one-hot", "--set", "priority", "--set", "equal", "--progress", "never",
                          "--markdown", str(md), "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    res = json.loads(out.read_text())
    tasks = res["tasks"]
    assert tasks == list(json.loads((ZOO / "manifest.json").read_text())["tasks"])

    # The uncorrected rows are what the zoo build measured with onnxruntime,
    # without Triton (tritonmodels/zoo/evaluate.py, results.json), to one
    # image or so of float rounding.
    zoo = json.loads((ZOO / "results.json").read_text())["accuracy"]
    uncorrected = {"Individual": next(r for r in res["rows"] if r["method"] == "individual")}
    uncorrected.update({r["backbone"]: r for r in res["rows"] if r["method"] == "merged"})
    assert sorted(uncorrected) == ["AdaMerging", "Individual", "TA"], sorted(uncorrected)
    for name, r in uncorrected.items():
        for t, a in zip(tasks, r["accuracy"]):
            assert abs(a - zoo[name][t]) <= 0.005, (name, t, a, zoo[name][t])

    # The served accuracy of each (backbone, set, point) on every task.
    served = {}
    for c in res["served"]:
        key = (c["backbone"], c.get("set", ""), c["label"])
        entry = served.setdefault(key, {"preference": c.get("preference"), "accuracy": {}})
        entry["accuracy"][c["task"]] = c["served_accuracy"]
    failures, notes = [], []
    for backbone in ("AdaMerging", "TA"):
        merged = [e for (b, s, _), e in served.items() if b == backbone and s == ""]
        assert len(merged) == 1, f"{backbone}: {len(merged)} uncorrected entries"
        merged = merged[0]["accuracy"]
        points = {kind: [(label, e) for (b, s, label), e in served.items() if b == backbone and s == kind]
                  for kind in ("one-hot", "priority", "equal")}
        assert [len(v) for v in points.values()] == [len(tasks), len(tasks), 1], (backbone, points)
        gaps = {}
        for kind, entries in points.items():
            beats = 0
            for label, e in entries:
                p = np.asarray(e["preference"], float)
                assert sorted(e["accuracy"]) == sorted(tasks), (backbone, label)
                assert abs(p.sum() - 1) < 1e-9, (backbone, label, p)
                acc = np.array([e["accuracy"][t] for t in tasks])
                base = np.array([merged[t] for t in tasks])
                gap = float(p @ acc - p @ base)
                gaps.setdefault(kind, []).append(gap)
                beats += gap > 0
                if gap <= 0:
                    what = f"{backbone} {label}: weighted accuracy {100 * p @ acc:.2f} vs merged {100 * p @ base:.2f}"
                    (notes if kind == "priority" else failures).append(what)
            summary = [s for s in res["summaries"]
                       if s["backbone"] == backbone and s["method"] == "react" and s["set"] == kind]
            assert len(summary) == 1 and summary[0]["beats_merged"] == beats, (backbone, kind, summary, beats)
        if not np.mean(gaps["priority"]) > 0:
            failures.append(f"{backbone} priority preferences: on average {100 * np.mean(gaps['priority']):+.2f} "
                            "points against merged")
    for note in notes:
        print(f"note: a priority preference that does not beat the merged backbone: {note}")
    assert not failures, "preferences that do not beat the merged backbone:\n  " + "\n  ".join(failures)

    fresh = _rows(md.read_text())
    recorded = _rows((ROOT / "docs" / "demo-results.md").read_text())
    assert len(fresh) > 30
    # The same rows; each number within half a point, so that a prediction
    # flipped by float rounding on another CPU (one image of digits' 500 is
    # 0.2 points) does not fail the check, but a stale table does. (The
    # served table's logit differences, ~1e-6, pass any CPU's rounding.)
    stale = []
    for label, numbers in fresh.items():
        old = recorded.get(label)
        if old is None or len(old) != len(numbers) or max(abs(a - b) for a, b in zip(old, numbers)) > 0.5:
            stale.append(f"{label}: recorded {old}, now {numbers}")
    assert not stale, "docs/demo-results.md is stale; rerun scripts/demo.sh --record docs/demo-results.md:\n" + "\n".join(stale)


def _rows(text):
    """{row label: its numbers} of the markdown tables `calibrate eval` writes;
    the label is the row's non-numeric cells."""
    rows = {}
    for line in text.splitlines():
        if not line.startswith("| ") or not re.search(r"\d", line):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        numbers, words = [], []
        for c in cells:
            try:
                numbers.append(float(c))
            except ValueError:
                words.append(c)
        if numbers:
            rows[" | ".join(words)] = numbers
    return rows
