"""The PromQL evaluator of promql_eval.py, which tests/test_sidecar_sampling.py
uses to evaluate the shipped alert rule on a sidecar's /metrics, against
values worked out by hand; no server needed."""

import math

import pytest

from promql_eval import Evaluator, alert_expr
from testenv import ROOT


def _samples(**series):
    """Scrape samples from name__label_value=value keyword pairs, e.g.
    resid__task_a=3 -> ("resid", {"task": "a"}, 3.0)."""
    out = []
    for key, v in series.items():
        name, _, label = key.partition("__")
        labels = dict([label.split("_", 1)]) if label else {}
        out.append((name, labels, float(v)))
    return out


SCRAPES = [
    (1000.0, _samples(resid__task_a=10, resid__task_b=5, target__task_a=100, target__task_b=50, rec__task_a=0.1,
                      rec__task_b=0.1, rows__task_a=0, rows__task_b=0)),
    (1010.0, _samples(resid__task_a=30, resid__task_b=2, target__task_a=200, target__task_b=60, rec__task_a=0.1,
                      rec__task_b=0.1, rows__task_a=500, rows__task_b=2000)),
    (1020.0, _samples(resid__task_a=70, resid__task_b=4, target__task_a=300, target__task_b=80, rec__task_a=0.1,
                      rec__task_b=0.1, rows__task_a=1500, rows__task_b=2500)),
]


@pytest.mark.parametrize("expr,want", [
    # a: (70-10)/20 s; b resets at 1010: (2 + 2)/20 s
    ("rate(resid[1h])", {"a": 3.0, "b": 0.2}),
    ("increase(rows[1h])", {"a": 1500.0, "b": 2500.0}),
    # the range leaves out the first scrape (left-open): 15 s back from 1020
    ("increase(resid[15s])", {"a": 40.0, "b": 2.0}),
    ("sum by (task) (rate(resid[1h])) / sum by (task) (rate(target[1h]))", {"a": 60 / 200, "b": 4 / 30}),
    ("sum(resid)", {None: 74.0}),
    ("max without (task) (resid)", {None: 70.0}),
    # * binds tighter than >, > tighter than and
    ("resid > 2 * 10 and rows > 1000", {"a": 70.0}),
    ("resid > 2 * 10 and rows > 3000", {}),
    ("rows unless resid > 5", {"b": 2500.0}),
    ("resid > 100 or rows > 2000", {"b": 2500.0}),
    ("(increase(resid[1h]) / increase(target[1h])) > 1.5 * max by (task) (rec)", {"a": 0.3}),
])
def test_vector_expressions(expr, want):
    got = Evaluator(SCRAPES).eval(expr)
    assert {dict(k).get("task"): v for k, v in got.items()} == pytest.approx(want), expr


def test_scalars():
    ev = Evaluator(SCRAPES)
    assert ev.eval("1 + 2 * 3 - 4 / 2") == 5
    assert ev.eval("time() - 20") == 1000
    assert math.isinf(ev.eval("1 / 0"))


@pytest.mark.parametrize("expr", ["rate(resid)", "resid > bool 1", "histogram_quantile(0.5, resid)",
                                  "resid * on (task) group_left rows", "resid["])
def test_refuses_what_it_does_not_know(expr):
    with pytest.raises(ValueError):
        Evaluator(SCRAPES).eval(expr)


def test_alert_expr_reads_the_shipped_rules():
    text = (ROOT / "docker" / "prometheus-rules.yml").read_text()
    stale = alert_expr(text, "ReactCorrectionStale")
    assert stale.startswith("(") and stale.endswith("> 1000"), stale
    assert "react_staleness_residual_squares_total" in stale
    assert alert_expr(text, "ReactSamplingNotWriting").startswith("react_sampling_in_flight >= 0")
    with pytest.raises(ValueError):
        alert_expr(text, "NoSuchAlert")
