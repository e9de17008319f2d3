"""TLS on the sidecar's own listeners, with the official tritonclient, in
front of the Triton of scripts/test.sh: each test starts its own sidecar
(bin/sidecar) with certificates made here by `openssl`.

- TLS: tritonclient.grpc with ssl=True and the CA, tritonclient.http over
  https with the CA, get the same logits as the backbone and head called
  on Triton directly; a client that does not trust the CA, and a plain
  one, get nothing.
- Mutual TLS: a client certificate of the configured client CA is served;
  none, or one of another CA, is refused, on both protocols; the metrics
  listener's /readyz needs none (what a kubelet probes).
- Rotation under load: the certificate is replaced three times, as a
  Kubernetes Secret update does it (a new ..<timestamp> directory, ..data
  swapped), while gRPC and HTTP clients call the sidecar, some with a new
  connection (and handshake) for every request; no request fails, and each
  new handshake after a rotation gets the new certificate.

Needs the venv, openssl, go and the zoo data; without them the tests skip,
or fail when REACT_E2E=1.
"""

import os
import pathlib
import shutil
import ssl
import subprocess
import threading
import time

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from sidecar_helpers import (FEATURE, IMAGE, LOGITS, Sidecar, assert_close, config_text, images, metric,
                             reference_logits, scrape, wait_for)
from testenv import ZOO, env, missing

COMPONENTS = ZOO / "components.safetensors"
FASHION = {"name": "fashion", "components": "zoo", "backbone": {"model": "backbone_adamerging", "output": FEATURE},
           "heads": [{"task": "fashion", "model": "head_fashion"}]}
PREFERENCE = "fashion=0.6,mnist=0.4"


# ---------------------------------------------------------------- certificates


class CA:
    """A certificate authority made with openssl, issuing P-256 leaf
    certificates for a server on 127.0.0.1 or for a client."""

    def __init__(self, directory, name):
        if not shutil.which("openssl"):
            missing("no openssl")
        self.dir = pathlib.Path(directory) / name
        self.dir.mkdir(parents=True)
        self.name = name
        self.crt, self.key = self.dir / "ca.crt", self.dir / "ca.key"
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.key, "-out", self.crt, "-days", "2", "-subj", f"/CN={name}")
        self.issued = 0

    def _openssl(self, *args):
        run = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"openssl {args[0]}: {run.stderr}"

    def issue(self, cn, server=True):
        """A leaf certificate and its key: (crt path, key path)."""
        self.issued += 1
        base = self.dir / f"{cn}-{self.issued}"
        key, csr, crt, ext = (base.with_suffix(s) for s in (".key", ".csr", ".crt", ".ext"))
        usage = "serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost" if server else "clientAuth"
        ext.write_text(f"basicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n")
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", key, "-out", csr, "-subj", f"/CN={cn}")
        self._openssl("x509", "-req", "-in", csr, "-CA", self.crt, "-CAkey", self.key, "-CAcreateserial",
                      "-out", crt, "-days", "2", "-extfile", ext)
        return crt, key


def bundle(path, *cas):
    """A file of several CAs' certificates (what a client trusts)."""
    pathlib.Path(path).write_text("".join(ca.crt.read_text() for ca in cas))
    return path


class SecretDir:
    """A directory laid out as a Kubernetes Secret volume: tls.crt and
    tls.key are symlinks through ..data to a timestamped directory, and an
    update swaps ..data as the kubelet does."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        self.path.mkdir(parents=True)
        self.serial = 0

    def put(self, crt, key):
        self.serial += 1
        stamp = self.path / f"..2026_11_27_00_00_00.{self.serial:09d}"
        stamp.mkdir()
        shutil.copyfile(crt, stamp / "tls.crt")
        shutil.copyfile(key, stamp / "tls.key")
        old = os.readlink(self.path / "..data") if (self.path / "..data").is_symlink() else None
        os.symlink(stamp.name, self.path / "..data_tmp")
        os.replace(self.path / "..data_tmp", self.path / "..data")
        for name in ("tls.crt", "tls.key"):
            if not (self.path / name).is_symlink():
                os.symlink(f"..data/{name}", self.path / name)
        if old:
            shutil.rmtree(self.path / old)

    @property
    def crt(self):
        return self.path / "tls.crt"

    @property
    def key(self):
        return self.path / "tls.key"


def served_certificate(addr):
    """The DER certificate the listener at addr presents now."""
    host, port = addr.rsplit(":", 1)
    return ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((host, int(port)), timeout=10))


def der(path):
    return ssl.PEM_cert_to_DER_cert(pathlib.Path(path).read_text())


# ---------------------------------------------------------------- the sidecar


@pytest.fixture
def triton():
    """The Triton of scripts/test.sh, direct."""
    addrs = {"grpc": env("TRITON_GRPC_ADDR"), "http": env("TRITON_HTTP_ADDR")}
    client = grpcclient.InferenceServerClient(addrs["grpc"])
    yield addrs, client
    client.close()


@pytest.fixture
def sidecars():
    started = []
    yield started
    for s in started:
        s.stop()


def start_tls_sidecar(sidecars, workdir, triton_addrs, tls):
    """A sidecar in front of Triton with server.tls as given, serving the
    fashion model; ready once its metrics listener's /readyz says so."""
    cfg = {
        "triton": {"grpc": triton_addrs["grpc"], "http": triton_addrs["http"], "startup_timeout": "60s"},
        "listen": {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", "metrics": "127.0.0.1:0", "shutdown_timeout": "5s"},
        "server": {"tls": {"enabled": True, **{k: str(v) for k, v in tls.items()}}},
        "components": [{"name": "zoo", "path": str(COMPONENTS)}],
        "models": [FASHION],
    }
    path = pathlib.Path(workdir) / "sidecar.yaml"
    path.write_text(config_text(cfg))
    side = Sidecar(path, workdir)
    sidecars.append(side)
    side.start(wait_ready=False)

    def ready():
        assert side.alive(), side.log()
        import urllib.request
        with urllib.request.urlopen(f"http://{side.metrics}/readyz", timeout=5) as resp:
            return resp.status == 200

    wait_for("the sidecar's /readyz", ready, timeout=60)
    return side


def grpc_client(side, ca_file, client=None):
    kw = {}
    if client:
        kw = {"private_key": str(client[1]), "certificate_chain": str(client[0])}
    return grpcclient.InferenceServerClient(side.grpc, ssl=True, root_certificates=str(ca_file), **kw)


def http_client(side, ca_file, client=None):
    opts = {"ca_certs": str(ca_file)}
    if client:
        opts.update(certfile=str(client[0]), keyfile=str(client[1]))
    return httpclient.InferenceServerClient(side.http, ssl=True, ssl_options=opts, connection_timeout=10,
                                            network_timeout=10)


def infer(client, protocol, x):
    module = grpcclient if protocol == "grpc" else httpclient
    inp = module.InferInput(IMAGE, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    return client.infer("fashion", [inp], headers={"react-preference": PREFERENCE}).as_numpy(LOGITS)


def refused(call):
    """Whether call() raises or returns something false."""
    try:
        return not call()
    except Exception:  # noqa: BLE001 - any failure to connect counts
        return True


def fails(call):
    """Whether call() raises (the error is returned), or None when it
    succeeds."""
    try:
        call()
    except Exception as err:  # noqa: BLE001 - any failure to connect counts
        return err
    return None


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_tls_with_tritonclient(tmp_path, triton, sidecars, protocol):
    addrs, direct = triton
    ca = CA(tmp_path, "server-ca")
    crt, key = ca.issue("sidecar")
    side = start_tls_sidecar(sidecars, tmp_path, addrs, {"cert_file": crt, "key_file": key})
    x = images("fashion", 3, seed=5)
    want = reference_logits(direct, x, PREFERENCE, COMPONENTS)
    make = grpc_client if protocol == "grpc" else http_client
    client = make(side, ca.crt)
    try:
        assert client.is_server_ready()
        assert_close(infer(client, protocol, x), want)
    finally:
        client.close()
    # A client that trusts another CA, and a plain one, get nothing.
    other = CA(tmp_path, "other-ca")
    assert refused(lambda: make(side, other.crt).is_server_ready())
    plain = (grpcclient if protocol == "grpc" else httpclient).InferenceServerClient(
        side.grpc if protocol == "grpc" else side.http)
    assert refused(plain.is_server_ready)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_mutual_tls_with_tritonclient(tmp_path, triton, sidecars, protocol):
    addrs, direct = triton
    ca, clients, intruders = CA(tmp_path, "server-ca"), CA(tmp_path, "client-ca"), CA(tmp_path, "intruder-ca")
    crt, key = ca.issue("sidecar")
    side = start_tls_sidecar(sidecars, tmp_path, addrs, {"cert_file": crt, "key_file": key, "client_ca_file": clients.crt})
    make = grpc_client if protocol == "grpc" else http_client
    x = images("fashion", 2, seed=6)
    client = make(side, ca.crt, clients.issue("client-a", server=False))
    try:
        assert_close(infer(client, protocol, x), reference_logits(direct, x, PREFERENCE, COMPONENTS))
    finally:
        client.close()
    for name, cert in [("no certificate", None), ("another CA's", intruders.issue("mallory", server=False))]:
        err = fails(lambda: infer(make(side, ca.crt, cert), protocol, x))
        assert err is not None, f"{protocol} with {name}: served"


def test_certificate_rotation_under_load(tmp_path, triton, sidecars):
    addrs, direct = triton
    ca1, ca2 = CA(tmp_path, "ca-2026"), CA(tmp_path, "ca-2027")
    trusted = bundle(tmp_path / "trusted.pem", ca1, ca2)  # what clients trust across a CA change
    secret = SecretDir(tmp_path / "secret")
    first = ca1.issue("sidecar")
    secret.put(*first)
    side = start_tls_sidecar(sidecars, tmp_path, addrs, {"cert_file": secret.crt, "key_file": secret.key})
    assert served_certificate(side.http) == der(first[0])

    x = images("fashion", 1, seed=7)
    want = reference_logits(direct, x, PREFERENCE, COMPONENTS)
    stop = threading.Event()
    results = []  # (client kind, ok, detail)
    lock = threading.Lock()

    def record(kind, ok, detail=""):
        with lock:
            results.append((kind, ok, detail))

    def worker(protocol, fresh):
        kind = f"{protocol}-{'fresh' if fresh else 'kept'}"
        make = grpc_client if protocol == "grpc" else http_client
        client = None
        while not stop.is_set():
            try:
                if client is None or fresh:
                    if client is not None:
                        client.close()
                    client = make(side, trusted)
                got = infer(client, protocol, x)
                assert_close(got, want)
                record(kind, True)
            except Exception as err:  # noqa: BLE001 - every failure is reported
                record(kind, False, repr(err)[:300])
                client = None
        if client is not None:
            client.close()

    threads = [threading.Thread(target=worker, args=(p, fresh), daemon=True)
               for p in ("grpc", "http") for fresh in (True, False)]
    for t in threads:
        t.start()
    rotations = [ca2.issue("sidecar"), ca1.issue("sidecar"), ca2.issue("sidecar")]
    try:
        time.sleep(2)
        for crt, key in rotations:
            secret.put(crt, key)
            want_der = der(crt)
            wait_for("the new certificate on a new connection", lambda: served_certificate(side.http) == want_der
                     and served_certificate(side.grpc) == want_der, timeout=10)
            time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    failed = [r for r in results if not r[1]]
    by_kind = {k: sum(1 for r in results if r[0] == k) for k in {r[0] for r in results}}
    print(f"{len(results)} requests during 3 rotations ({by_kind}), {len(failed)} failed")
    assert failed == [], failed[:5]
    assert all(by_kind.get(f"{p}-{f}", 0) > 0 for p in ("grpc", "http") for f in ("fresh", "kept")), by_kind
    samples = scrape(side.metrics)
    assert metric(samples, "react_tls_reloads_total", result="success") >= 3
    assert metric(samples, "react_tls_last_reload_successful") == 1
    assert "TLS certificate reloaded" in side.log()
