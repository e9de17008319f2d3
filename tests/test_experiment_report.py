"""`calibrate experiment report --format json` against an independent
computation of its statistics in numpy and SciPy. Needs no Triton: a small
HTTP server on 127.0.0.1 serves a sidecar's /metrics page, written here
from outcomes drawn with numpy as experiment/feedback counts them (per arm:
the count, the sum and the sum of squares of the scores).

The reference computes from the drawn outcomes themselves, not from the
counters:

- the sample-ratio check is Pearson's chi-square test of the arms' outcome
  counts against their weights, scipy.stats.chisquare;
- the always-valid p-value is the normal-mixture sequential probability
  ratio test (mSPRT; Robbins 1970), as Johari, Koomen, Pekelis and Walsh
  set it out for A/B tests ("Peeking at A/B tests: why it matters, and
  what to do about it", KDD 2017; and "Always valid inference: continuous
  monitoring of A/B tests", arXiv:1512.04922): with Δ̂ the difference of
  the means, v = s_c²/n_c + s_a²/n_a (sample variances, ddof=1) and a
  normal mixture of variance τ² over the difference,

      Λ = sqrt(v / (v + τ²)) · exp(τ² Δ̂² / (2 v (v + τ²))),   p = min(1, 1/Λ),

  and the confidence sequence Δ̂ ± sqrt(v (v + τ²)/τ² · (2 ln(1/α) +
  ln((v + τ²)/v))), at α/k for each of k arms beside the control
  (Bonferroni); one arm's mean takes the same sequence with v = s²/n,
  clipped to [0, 1]. docs/sidecar.md, "Deciding an experiment", states the
  same formulas.
"""

import http.server
import json
import subprocess
import threading

import numpy as np
import pytest
from scipy import stats

TAU = 0.05


def _metrics_page(experiment, model, kind, outcomes, noise=True):
    """The text page a sidecar serves for these outcomes: {arm: array}."""
    task = "fashion" if kind == "label" else ""
    lines = []
    for name, value in (("react_experiment_outcomes_total", len),
                        ("react_experiment_outcome_score_total", np.sum),
                        ("react_experiment_outcome_score_squares_total", lambda x: np.sum(x * x))):
        lines.append(f"# HELP {name} Outcomes.")
        lines.append(f"# TYPE {name} counter")
        for arm, x in outcomes.items():
            labels = f'arm="{arm}",experiment="{experiment}",kind="{kind}",model="{model}",task="{task}"'
            lines.append(f"{name}{{{labels}}} {float(value(x))!r}")
        if noise:  # another experiment, which the report leaves out
            lines.append(f'{name}{{arm="{arm}",experiment="other",kind="{kind}",model="m2",task="{task}"}} 7')
    return "\n".join(lines) + "\n"


@pytest.fixture
def serve():
    """serve(page) returns the URL of a /metrics that answers page."""
    servers = []

    def start(page):
        body = page.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/metrics"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _report(calibrate, *args):
    run = subprocess.run([str(calibrate), "experiment", "report", "--format", "json", *args],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _half_width(v, alpha):
    t2 = TAU * TAU
    return np.sqrt(v * (v + t2) / t2 * (2 * np.log(1 / alpha) + np.log((v + t2) / v)))


def _check(report, outcomes, weights, control, alpha):
    """Every number of the report against the reference."""
    arms = list(outcomes)
    k = sum(1 for a in arms if a != control and weights[a] > 0)
    assert report["comparisons"] == k
    assert report["alpha_per_comparison"] == pytest.approx(alpha / k, rel=1e-12)

    n = np.array([len(outcomes[a]) for a in arms], dtype=float)
    w = np.array([weights[a] for a in arms], dtype=float)
    chi = stats.chisquare(n, f_exp=n.sum() * w / w.sum())
    sr = report["sample_ratio"]
    assert sr["chi_square"] == pytest.approx(chi.statistic, rel=1e-9)
    assert sr["p_value"] == pytest.approx(chi.pvalue, rel=1e-6, abs=1e-300)
    assert sr["df"] == len(arms) - 1
    assert sr["mismatch"] == bool(chi.pvalue < 0.001)

    xc = outcomes[control]
    by_name = {a["name"]: a for a in report["arms"]}
    for arm in arms:
        x, got = outcomes[arm], by_name[arm]
        assert got["n"] == len(x)
        assert got["sum"] == pytest.approx(x.sum(), rel=1e-12)
        assert got["mean"] == pytest.approx(x.mean(), rel=1e-12)
        half = _half_width(x.var(ddof=1) / len(x), alpha)
        assert got["lower"] == pytest.approx(max(0.0, x.mean() - half), rel=1e-9, abs=1e-12)
        assert got["upper"] == pytest.approx(min(1.0, x.mean() + half), rel=1e-9, abs=1e-12)
        if arm == control:
            assert got["decision"] == "control" and "vs_control" not in got
            continue
        diff = x.mean() - xc.mean()
        v = xc.var(ddof=1) / len(xc) + x.var(ddof=1) / len(x)
        t2 = TAU * TAU
        lam = np.sqrt(v / (v + t2)) * np.exp(t2 * diff * diff / (2 * v * (v + t2)))
        cmp = got["vs_control"]
        assert cmp["diff"] == pytest.approx(diff, rel=1e-12, abs=1e-15)
        assert cmp["p_value"] == pytest.approx(min(1.0, 1 / lam), rel=1e-9)
        half = _half_width(v, alpha / k)
        assert cmp["lower"] == pytest.approx(diff - half, rel=1e-9)
        assert cmp["upper"] == pytest.approx(diff + half, rel=1e-9)
        enough = len(x) >= 100 and len(xc) >= 100
        if chi.pvalue < 0.001:
            want = "sample ratio mismatch: do not trust"
        elif enough and diff - half > 0:
            want = f"{arm} better than {control}"
        elif enough and diff + half < 0:
            want = f"{arm} worse than {control}"
        else:
            want = "no decision yet"
        assert got["decision"].startswith(want), (arm, got["decision"], want)
        # The decision and the p-value agree: below α/k exactly when the
        # interval leaves out 0.
        assert (cmp["p_value"] < alpha / k) == (diff - half > 0 or diff + half < 0)


def test_labels_two_arms(calibrate, serve):
    """Labels (1 when the prediction matched): react ahead of merged."""
    rng = np.random.default_rng(25)
    outcomes = {"merged": (rng.random(2410) < 0.71).astype(float),
                "react": (rng.random(2390) < 0.77).astype(float)}
    url = serve(_metrics_page("fashion-ab", "fashion_ab", "label", outcomes))
    report = _report(calibrate, "--experiment", "fashion-ab", "--arms", "merged=50,react=50", "--metrics", url)
    assert report["kind"] == "label"
    _check(report, outcomes, {"merged": 50, "react": 50}, "merged", 0.05)
    assert report["decision"] == "react better than merged"


def test_rewards_three_arms(calibrate, serve):
    """Rewards in [0, 1] over three arms of unequal weights, at α = 0.1,
    from two replicas whose counters the report sums."""
    rng = np.random.default_rng(7)
    weights = {"A": 50, "B": 30, "C": 20}
    outcomes = {"A": rng.beta(5, 5, 3000), "B": rng.beta(5, 4.6, 1800), "C": rng.beta(5, 5, 1230)}
    half = {a: len(x) // 3 for a, x in outcomes.items()}
    urls = [serve(_metrics_page("homepage", "home", "reward", {a: x[:half[a]] for a, x in outcomes.items()})),
            serve(_metrics_page("homepage", "home", "reward", {a: x[half[a]:] for a, x in outcomes.items()}, noise=False))]
    report = _report(calibrate, "--experiment", "homepage", "--model", "home", "--arms", "A=50,B=30,C=20",
                     "--alpha", "0.1", "--metrics", urls[0], "--metrics", urls[1])
    assert report["kind"] == "reward"
    # The sums of squares travelled too: the reference's variances come
    # from the outcomes, the report's from the counters.
    for a in report["arms"]:
        assert a["sum_squares"] == pytest.approx(np.sum(outcomes[a["name"]] ** 2), rel=1e-12)
    _check(report, outcomes, weights, "A", 0.1)


def test_sample_ratio_mismatch(calibrate, serve):
    """Arms of equal weight whose counts are far apart: a mismatch, and no
    arm declared better whatever its outcomes."""
    rng = np.random.default_rng(3)
    outcomes = {"merged": (rng.random(1400) < 0.6).astype(float),
                "react": (rng.random(1000) < 0.8).astype(float)}
    url = serve(_metrics_page("fashion-ab", "fashion_ab", "label", outcomes))
    report = _report(calibrate, "--experiment", "fashion-ab", "--arms", "merged=1,react=1", "--metrics", url)
    _check(report, outcomes, {"merged": 1, "react": 1}, "merged", 0.05)
    assert report["sample_ratio"]["mismatch"]
    assert report["decision"] == "sample ratio mismatch: do not trust"
