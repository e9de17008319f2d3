"""scripts/report.py's "calibrated from traffic" rows, without Triton: a
synthetic second-zoo evaluation and a synthetic record of
scripts/traffic-row.sh, whose rows are checked against numbers worked out
by hand here (accuracies, normalised accuracies, shares of the gap, the
largest difference from the oracle row).

The record's evaluation lists its tasks in another order than the report's,
so a row that copied the record's accuracies in its own order would fail.
"""
import copy
import json
import runpy
import subprocess
import sys

import pytest

from testenv import ROOT

REPORT = ROOT / "scripts" / "report.py"
rp = runpy.run_path(str(REPORT))
OWN = "one-hot, each task at its own"
TASKS = ["a", "b"]
IND = [0.90, 0.80]


def row(backbone, method, label, acc, setname=None):
    r = {"backbone": backbone, "method": method, "label": label, "accuracy": list(acc)}
    if setname:
        r["set"] = setname
    return r


def backbone_rows(b, merged, eq, own, oracle_eq, oracle_own):
    return [
        row(b, "merged", "none", merged),
        row(b, "react", "equal", eq, "equal"),
        row(b, "react", "a=0.5, others 0.5", [0.5, 0.5], "priority"),
        row(b, "react", "b=0.5, others 0.5", [0.5, 0.5], "priority"),
        row(b, "react", OWN, own, "one-hot"),
        row(f"{b} 10%", "react", "equal", [0.1, 0.1], "equal"),
        row(f"{b} 10%", "react", OWN, [0.2, 0.2], "one-hot"),
        row(b, "oracle", "equal", oracle_eq, "equal"),
        row(b, "oracle", OWN, oracle_own, "one-hot"),
    ]


def eff_eval():
    rows = [{"method": "individual", "label": "expert_t → head_t", "accuracy": IND}]
    for b in ("TA", "TIES", "AdaMerging"):
        # merged average 0.75, gap 0.10; oracle equal average 0.80 (50%), own 0.84 (90%)
        rows += backbone_rows(b, [0.80, 0.70], [0.82, 0.70], [0.84, 0.72], [0.84, 0.76], [0.88, 0.80])
    linear = [{"backbone": b, "task": t, "r2_in_sample": 0.9, "r2_heldout": 0.8, "r2_heldout_ridge": 0.85, "ridge": 0.1}
              for b in ("TA", "TIES", "AdaMerging") for t in TASKS]
    return {"tasks": TASKS, "individual": IND, "samples": [100, 50], "rows": rows, "linear": linear}


def record():
    """The record: its eval's tasks in the order b, a; TA from traffic at
    equal (a 0.83, b 0.75: average 0.79, 40% of the gap) and own one-hot
    (a 0.87, b 0.79: 0.83, 80%); its own oracle equal to the report's."""
    rev = lambda v: [v[1], v[0]]  # noqa: E731
    lab = "TA traffic"
    rows = [{"method": "individual", "label": "expert_t → head_t", "accuracy": rev(IND)},
            row(lab, "merged", "none", rev([0.80, 0.70])),
            row(lab, "react", "equal", rev([0.83, 0.75]), "equal"),
            row(lab, "react", OWN, rev([0.87, 0.79]), "one-hot"),
            row(lab, "oracle", "equal", rev([0.84, 0.76]), "equal"),
            row(lab, "oracle", OWN, rev([0.88, 0.80]), "one-hot")]
    return {"date": "2026-11-27 10:00 UTC", "commit": "abc1234", "cores": 2, "cpu": "Some CPU", "seconds": 321, "chunk": 64,
            "backbones": {"TA": {"label": lab, "sampling_seconds": 99, "samples": {"a": 100, "b": 50}}},
            "eval": {"tasks": ["b", "a"], "individual": rev(IND), "samples": [50, 100], "rows": rows}}


def cells(table, name, setting):
    for line in table.splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if parts[:2] == [name, setting]:
            return parts[2:]
    raise AssertionError(f"no row {name!r} / {setting!r} in\n{table}")


def test_table1_traffic_rows():
    table, _ = rp["table1"](eff_eval(), record())
    name = "ReACT TA, calibrated from traffic"
    # a: 0.83/0.90 = 92.2%, b: 0.75/0.80 = 93.75%: normalised 93.0
    assert cells(table, name, "equal") == ["83.0", "75.0", "79.0", "93.0"]
    # a: 0.87/0.90 = 96.7%, b: 0.79/0.80 = 98.75%: normalised 97.7
    assert cells(table, name, OWN) == ["87.0", "79.0", "83.0", "97.7"]
    assert cells(table, name, "samples per task (the test inputs, sampled)") == ["100", "50", "150 in all", ""]
    lines = table.splitlines()
    at = [i for i, line in enumerate(lines) if name in line]
    assert at == [at[0], at[0] + 1, at[0] + 2]
    assert "ReACT TA, 10% calib" in lines[at[0] - 1] and lines[at[0] + 3].startswith("| oracle TA | equal")
    # only the record's backbones get rows
    assert sum(name.replace("TA", b) in table for b in ("TIES", "AdaMerging")) == 0


def test_table1_without_record_unchanged():
    plain, gaps = rp["table1"](eff_eval())
    with_rec, gaps_rec = rp["table1"](eff_eval(), record())
    assert "traffic" not in plain
    assert [line for line in with_rec.splitlines() if "traffic" not in line] == plain.splitlines()
    assert gaps == gaps_rec


def test_traffic_shares():
    merged, gap, e, o, oe, oo, diff = rp["traffic_shares"](eff_eval(), record(), "TA")
    assert merged == pytest.approx(0.75) and gap == pytest.approx(0.10)
    assert (e, o, oe, oo) == pytest.approx((0.40, 0.80, 0.50, 0.90))
    # largest |traffic − oracle| over tasks and both preferences: a equal 0.83 vs 0.84, ... 0.01
    assert diff == pytest.approx(1.0)


def test_traffic_shares_against_another_oracle():
    eff = eff_eval()
    for r in eff["rows"]:
        if r.get("backbone") == "TA" and r["method"] == "oracle" and r["label"] == OWN:
            r["accuracy"] = [0.90, 0.82]  # b: 0.79 from traffic, 3 points below
    *_, oo, diff = rp["traffic_shares"](eff, record(), "TA")
    assert oo == pytest.approx((0.86 - 0.75) / 0.10)
    assert diff == pytest.approx(3.0)


def test_zoo_comparison_row():
    g, _ = rp["zoo_comparison"](eff_eval(), eff_eval(), record())
    assert cells(g, "EfficientNet-Lite0 (D=1280)", "TA, calibrated from traffic") == ["75.0", "10.0", "40%", "80%", "50%", "90%"]
    g0, _ = rp["zoo_comparison"](eff_eval(), eff_eval())
    assert "traffic" not in g0


def test_paragraph():
    text = rp["traffic_paragraph"](eff_eval(), record())
    for want in ("commit abc1234", "2 CPU cores (Some CPU)", "321 s in all", "TA 99 s", "64 images a request",
                 "TA: 40% of the gap at equal (oracle 50%), 80% at one-hot (oracle 90%)", "1.00 points"):
        assert want in text, f"{want!r} not in {text!r}"


def test_summary_command(tmp_path):
    path = tmp_path / "traffic.json"
    path.write_text(json.dumps(record()))
    run = subprocess.run([sys.executable, str(REPORT), "--traffic", str(path), "--traffic-summary"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # the summary's table is in the record's own task order (b, a)
    assert cells(run.stdout, "ReACT TA, calibrated from traffic", "equal") == ["75.0", "83.0", "79.0", "93.0"]
    assert cells(run.stdout, "oracle TA", OWN) == ["80.0", "88.0", "84.0", "98.9"]
    assert "from traffic 40.0% equal, 80.0% one-hot; oracle 50.0%, 90.0%; largest task difference 1.00 points" in run.stdout
    missing = subprocess.run([sys.executable, str(REPORT), "--traffic", str(tmp_path / "none.json"), "--traffic-summary"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "no record" in missing.stderr


def test_record_oracle_label_fallback():
    """A record whose eval labels its oracle rows by the backbone (not the
    components label) is read as well."""
    rec = copy.deepcopy(record())
    for r in rec["eval"]["rows"]:
        if r["method"] == "oracle":
            r["backbone"] = "TA"
    assert rp["traffic_acc"](rec, "TA", "oracle", "equal") == {"a": 0.84, "b": 0.76}
