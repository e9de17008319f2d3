"""Helpers shared by tests/test_sidecar.py (the Triton and sidecar of
scripts/test.sh) and tests/test_sidecar_ops.py (dedicated Tritons and
sidecars that the tests start and stop themselves).

The reference computations here are independent of the sidecar: the
backbone and the heads are called directly on Triton, W_p comes from
`bin/calibrate solve`, and the correction is a float64 product in numpy.
"""

import atexit
import functools
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np
from export_calib import images as _split_images  # tritonmodels/demo

from testenv import ROOT, TEST_REPO, ZOO, ZOO_REPO, binary, zoo_data, zoo_split

MANIFEST = json.loads((ZOO / "manifest.json").read_text())
TASKS = list(MANIFEST["tasks"])
IMAGE = MANIFEST["backbone"]["input"]["name"]
FEATURE = MANIFEST["backbone"]["output"]["name"]
LOGITS = MANIFEST["head"]["output"]
D = MANIFEST["D"]


def wait_for(what, probe, timeout=30.0, interval=0.05):
    """Polls probe() until it returns something truthy, for at most timeout
    seconds; returns that value. Exceptions from probe count as not yet."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = probe()
            if value:
                return value
            last = value
        except Exception as err:  # noqa: BLE001 - reported if it never succeeds
            last = err
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s (last: {last!r})")
        time.sleep(interval)


_WP_DIR = tempfile.mkdtemp(prefix="react-wp-")
atexit.register(shutil.rmtree, _WP_DIR, ignore_errors=True)


@functools.cache
def solve_wp(components, preference):
    """W_p (float32 D×D, ẑ = W @ z) as `bin/calibrate solve` writes it."""
    out = pathlib.Path(_WP_DIR) / f"W{len(os.listdir(_WP_DIR))}.npy"
    run = subprocess.run([str(binary("calibrate")), "solve", "--components", str(components),
                          "--preference", preference, "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"calibrate solve {preference}: {run.stderr}"
    w = np.load(out)
    assert w.dtype == np.float32 and w.shape == (D, D), (w.dtype, w.shape)
    w.setflags(write=False)
    return w


# ---------------------------------------------------------------- data


@functools.cache
def _split(task, split):
    zoo_split(task, split)
    x, _ = _split_images(zoo_data(), task, split)
    return x


def images(task, n, seed=0, split="test"):
    """n images of a task's split (a seeded random choice), float32 [n,1,28,28]."""
    x = _split(task, split)
    rows = np.sort(np.random.default_rng(seed).choice(len(x), size=n, replace=False))
    return np.ascontiguousarray(x[rows])


# ---------------------------------------------------------------- Triton calls


def grpc_infer(client, model, inputs, outputs=None, **kwargs):
    """Runs model with tritonclient.grpc; inputs maps names to arrays
    (FP32 or FP16). Returns the InferResult."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import np_to_triton_dtype

    tensors = []
    for name, array in inputs.items():
        t = grpcclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        t.set_data_from_numpy(np.ascontiguousarray(array))
        tensors.append(t)
    requested = [grpcclient.InferRequestedOutput(o) for o in outputs] if outputs else None
    return client.infer(model, tensors, outputs=requested, **kwargs)


def reference_logits(triton, x, preference, components, backbone="backbone_adamerging", head="head_fashion"):
    """head(W_p · backbone(x)), each model called directly on Triton (gRPC
    client `triton`), W_p from calibrate solve, the product in float64;
    preference None means no correction."""
    z = grpc_infer(triton, backbone, {IMAGE: x}, [FEATURE]).as_numpy(FEATURE)
    z = z.astype(np.float32).astype(np.float64)  # FP16 features widen exactly
    if preference is not None:
        w = solve_wp(str(components), preference).astype(np.float64)
        z = z @ w.T
    return grpc_infer(triton, head, {FEATURE: z.astype(np.float32)}, [LOGITS]).as_numpy(LOGITS)


def assert_close(got, want, rel=1e-4, what="logits"):
    """got equals want within rel times the largest |want|."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    scale = max(float(np.abs(want).max()), 1e-6)
    diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    assert diff <= rel * scale, f"{what}: max |diff| {diff:.3e} > {rel:g} × {scale:.3e}"


# ---------------------------------------------------------------- raw HTTP


def http_request(addr, method, path, body=None, headers=None, timeout=60):
    """One HTTP request on a new connection: (status, headers dict with
    lower-case names, body bytes)."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def json_infer_body(inputs, outputs=None, parameters=None, request_id=None):
    """An HTTP/JSON inference body: inputs maps names to FP32 arrays."""
    body = {"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32", "data": a.ravel().tolist()}
                       for n, a in inputs.items()]}
    if outputs is not None:
        body["outputs"] = [{"name": o} for o in outputs]
    if parameters:
        body["parameters"] = parameters
    if request_id is not None:
        body["id"] = request_id
    return json.dumps(body).encode()


def http_ready(addr, path="/v2/health/ready"):
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


# ---------------------------------------------------------------- metrics

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(addr):
    """The samples of a Prometheus text page: [(name, {label: value}, float)]."""
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"unparsable metrics line: {line!r}"
        labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in _LABEL.findall(m.group(2) or "")}
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def metric(samples, name, **labels):
    """The sum of a metric's samples whose labels include `labels` (0 if none)."""
    return sum(v for n, ls, v in samples if n == name and all(ls.get(k) == want for k, want in labels.items()))


# ---------------------------------------------------------------- dedicated instances


def free_ports(n):
    """n distinct TCP ports the kernel reports free on 127.0.0.1."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def small_repo(root, models=("backbone_adamerging", "head_fashion", "head_mnist"), test_models=()):
    """A model repository at root/repo of symlinks to zoo models (and to
    models of triton/testdata/repo), with root/zoo -> tritonmodels/zoo, which
    the zoo configs name as ../zoo/onnx/..."""
    repo = pathlib.Path(root) / "repo"
    repo.mkdir(parents=True)
    for m in (*models, "onnx_runner.py"):
        (repo / m).symlink_to(ZOO_REPO / m)
    for m in test_models:
        (repo / m).symlink_to(TEST_REPO / m)
    (pathlib.Path(root) / "zoo").symlink_to(ZOO)
    return repo


class Triton:
    """A tritonserver of its own, started with scripts/triton-up and stopped
    with scripts/triton-down."""

    def __init__(self, repo, workdir, extra=()):
        self.repo, self.workdir, self.extra = pathlib.Path(repo), pathlib.Path(workdir), list(extra)
        self.pid_file = self.workdir / "tritonserver.pid"
        self.log = self.workdir / "tritonserver.log"
        self.ports = None

    @property
    def grpc(self):
        return f"127.0.0.1:{self.ports[0]}"

    @property
    def http(self):
        return f"127.0.0.1:{self.ports[1]}"

    def start(self, ports=None, timeout=180):
        """Starts it on ports (grpc, http, metrics), or on free ones (with
        retries, since a port can be taken before Triton binds it)."""
        attempts = 1 if ports else 3
        for _ in range(attempts):
            self.ports = list(ports or free_ports(3))
            run = subprocess.run(
                [str(ROOT / "scripts" / "triton-up"), "--repo", str(self.repo), "--grpc-port", str(self.ports[0]),
                 "--http-port", str(self.ports[1]), "--metrics-port", str(self.ports[2]), "--log", str(self.log),
                 "--pid", str(self.pid_file), "--timeout", str(timeout), *self.extra],
                capture_output=True, text=True, timeout=timeout + 60)
            if run.returncode == 0:
                return self
        raise AssertionError(f"triton-up failed: {run.stdout}{run.stderr}")

    def pid(self):
        return int(self.pid_file.read_text())

    def kill(self):
        """SIGKILL the server (its Python stubs stay: down() reaps them)."""
        os.kill(self.pid(), signal.SIGKILL)

    def down(self):
        if self.pid_file.exists():
            subprocess.run([str(ROOT / "scripts" / "triton-down"), "--pid", str(self.pid_file), "--grace", "30"],
                           capture_output=True, text=True, timeout=120)


class Sidecar:
    """bin/sidecar with a configuration file, started with Popen; the
    addresses it listens on are read from its log (the configuration
    listens on port 0)."""

    LISTENING = re.compile(r'msg="sidecar listening" grpc=(\S+) http=(\S+) .*metrics=(\S+)')
    _serial = 0

    def __init__(self, config, workdir, args=(), env=None):
        self.config, self.workdir = pathlib.Path(config), pathlib.Path(workdir)
        self.args, self.env = list(args), env
        Sidecar._serial += 1
        self.log_path = self.workdir / f"sidecar-{Sidecar._serial}.log"
        self.proc = None
        self.grpc = self.http = self.metrics = None

    def start(self, wait_ready=True, timeout=60):
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(binary("sidecar")), "--config", str(self.config), *self.args],
                                     stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=self.log_file,
                                     env={**os.environ, **(self.env or {})})

        def listening():
            assert self.proc.poll() is None, f"the sidecar exited with {self.proc.returncode}:\n{self.log()}"
            return self.LISTENING.search(self.log())

        m = wait_for("the sidecar's listening line", listening, timeout=timeout)
        self.grpc, self.http, self.metrics = m.group(1), m.group(2), m.group(3)
        if wait_ready:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=60):
        def ready():
            assert self.proc.poll() is None, f"the sidecar exited with {self.proc.returncode}:\n{self.log()}"
            return http_ready(self.http)

        wait_for("the sidecar's /v2/health/ready", ready, timeout=timeout)

    def log(self):
        return self.log_path.read_text(errors="replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()
        return self.proc.returncode


def sidecar_config(triton, components, models, **sections):
    """A sidecar configuration as a dict: Triton's addresses, listening on
    port 0 of 127.0.0.1 (the addresses are read from the log), the
    components entries (name -> (path, presets or None)), the models, and
    any other sections."""
    cfg = {
        "triton": {"grpc": triton.grpc, "http": triton.http, "startup_timeout": "60s"},
        "listen": {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", "metrics": "127.0.0.1:0", "shutdown_timeout": "5s"},
        "components": [{"name": name, "path": str(p), **({"presets": ps} if ps else {})}
                       for name, (p, ps) in components.items()],
        "models": models,
    }
    cfg.update(sections)
    return json.loads(json.dumps(cfg))  # a deep copy: callers may edit it


def config_text(cfg):
    """A configuration as file text: JSON, which is also YAML."""
    return json.dumps(cfg, indent=2) + "\n"


def atomic_write(path, data):
    """Replaces path's content atomically (a temporary file renamed over it)."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
    os.replace(tmp, path)
