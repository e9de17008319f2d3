"""The zoo through the ReACT sidecar on its whole test sets, and the shipped
components files against a fresh calibration.

Both run against the Triton and the sidecar of scripts/test.sh (zoo
configuration tritonmodels/zoo/sidecar.yaml): TRITON_GRPC_ADDR and
SIDECAR_GRPC_ADDR. Without them they skip, or fail when REACT_E2E=1.
"""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file

ROOT = pathlib.Path(__file__).resolve().parents[1]
ZOO = ROOT / "tritonmodels" / "zoo"
DATA = pathlib.Path(os.environ.get("ZOO_DATA", ROOT / ".cache" / "zoo-data"))
PY = sys.executable


def _addr(name):
    value = os.environ.get(name)
    if not value:
        message = f"{name} is not set: run the tests through scripts/test.sh"
        if os.environ.get("REACT_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return value


def test_shipped_components_match_a_fresh_calibration(tmp_path):
    """tritonmodels/zoo/components*.safetensors are what
    scripts/zoo-components.sh computes now, on the served models: the same
    tasks, N_t and metadata, and the same statistics to float tolerance (the
    features are computed in float32 by onnxruntime, whose kernels may round
    differently on another CPU)."""
    triton = _addr("TRITON_GRPC_ADDR")
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
            if key in ("sha256", "metadata_sha256"):
                continue
            assert meta_fresh[key] == meta_shipped[key], f"{name} metadata {key}"


def _metadata(path):
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        return f.metadata()


def test_accuracy_through_the_sidecar(tmp_path):
    """On the zoo's whole test sets, through the sidecar with the preference
    in a header: every one-hot preference and the uniform one beat the
    uncorrected merged backbone, and the priority ones on average, for the
    AdaMerging and TA backbones (evaluate.py --check); and the table recorded
    in docs/demo-results.md is this evaluation's."""
    sidecar, triton = _addr("SIDECAR_GRPC_ADDR"), _addr("TRITON_GRPC_ADDR")
    md = tmp_path / "results.md"
    run = subprocess.run([PY, "tritonmodels/demo/evaluate.py", "--sidecar", sidecar, "--triton", triton,
                          "--data", str(DATA), "--check", "--markdown", str(md)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    fresh = _rows(md.read_text())
    recorded = _rows((ROOT / "docs" / "demo-results.md").read_text())
    assert len(fresh) > 30
    # The same rows; each number within half a point, so that a prediction
    # flipped by float rounding on another CPU (one image of digits' 500 is
    # 0.2 points) does not fail the check, but a stale table does.
    stale = []
    for label, numbers in fresh.items():
        old = recorded.get(label)
        if old is None or len(old) != len(numbers) or max(abs(a - b) for a, b in zip(old, numbers)) > 0.5:
            stale.append(f"{label}: recorded {old}, now {numbers}")
    assert not stale, "docs/demo-results.md is stale; rerun scripts/demo.sh --record docs/demo-results.md:\n" + "\n".join(stale)


def _rows(text):
    """{row label: its numbers} of the markdown tables evaluate.py writes;
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
