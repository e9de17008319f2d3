"""Pass-through as faithful as Triton itself (issue 27, item 8): the same
request sent to the real Triton and through the sidecar gets the same
answer, byte for byte, where the sidecar used to differ.

- Against the Triton and the zoo sidecar of scripts/test.sh: raw binary
  requests (Inference-Header-Content-Length 0), header lengths Triton reads
  with atoi (252abc), an output requested twice, malformed JSON (Triton's
  500 and rapidjson's reason), the HTTP repository index (Triton's entries
  byte for byte, the controllable models added, a malformed body answered
  by Triton), and a 70 MiB request.
- On dedicated instances (a Triton of triton/testdata/repo and a
  pass-through sidecar, each started and stopped here): a gRPC stream that
  Triton refuses when it opens (--grpc-restricted-protocol) is refused at
  once through the sidecar too; and Triton's graceful shutdown after a
  request through the sidecar takes about as long as without it (the
  sidecar's idle keep-alive connection used to hold it for the whole exit
  timeout).

Needs the venv and a real Triton; skips without them, fails under
REACT_E2E=1.
"""

import json
import queue
import signal
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from sidecar_helpers import Sidecar, Triton, config_text, http_request, sidecar_config, wait_for
from testenv import TEST_REPO, env

ICL = "Inference-Header-Content-Length"
# The headers whose values must agree (Date differs, and the sidecar's
# proxy may add none of its own to these).
COMPARED = ("content-type", "inference-header-content-length")


@pytest.fixture(scope="module")
def addrs():
    return {k: env(k) for k in ("TRITON_HTTP_ADDR", "TRITON_GRPC_ADDR", "SIDECAR_HTTP_ADDR", "SIDECAR_GRPC_ADDR")}


def both(addrs, method, path, body=None, headers=None):
    """The same request to Triton and through the sidecar: their
    (status, compared headers, body)."""
    out = []
    for key in ("TRITON_HTTP_ADDR", "SIDECAR_HTTP_ADDR"):
        status, hdrs, data = http_request(addrs[key], method, path, body, headers)
        out.append((status, {k: hdrs.get(k) for k in COMPARED}, data))
    return out


def assert_same(triton, sidecar, what):
    assert sidecar == triton, f"{what}:\n  Triton:  {triton[0]} {triton[1]} {triton[2][:300]!r}\n  sidecar: {sidecar[0]} {sidecar[1]} {sidecar[2][:300]!r}"


def affine_binary(rows, rng):
    """A binary affine_fp32 request: its JSON header and the whole body."""
    data = rng.standard_normal((rows, 4)).astype(np.float32).tobytes()
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [rows, 4],
                                     "parameters": {"binary_data_size": len(data)}}]}).encode()
    return header, header + data


def test_raw_binary_request(addrs):
    """Inference-Header-Content-Length 0: the whole body is the only
    input's data; Triton deduces the shape. The sidecar used to answer 400."""
    rng = np.random.default_rng(1)
    for rows in (1, 3):
        body = rng.standard_normal((rows, 4)).astype(np.float32).tobytes()
        triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", body, {ICL: "0"})
        assert triton[0] == 200, triton
        assert_same(triton, sidecar, f"raw request of {rows} rows")
        # The answer is 2x+1 of the body, in binary.
        hl = int(sidecar[1]["inference-header-content-length"])
        got = np.frombuffer(sidecar[2][hl:], np.float32)
        np.testing.assert_array_equal(got, 2 * np.frombuffer(body, np.float32) + 1)
    # A size that does not fit the shape: Triton's own refusal.
    triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", b"\0" * 33, {ICL: "0"})
    assert triton[0] == 400
    assert_same(triton, sidecar, "raw request of 33 bytes")


@pytest.mark.parametrize("suffix", ["abc", " ", "x1"])
def test_header_length_read_with_atoi(addrs, suffix):
    """A header length of 252abc is 252 to Triton; the sidecar used to
    refuse it."""
    header, body = affine_binary(2, np.random.default_rng(2))
    triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", body, {ICL: f"{len(header)}{suffix}"})
    assert triton[0] == 200, triton
    assert_same(triton, sidecar, f"header length {len(header)}{suffix}")


@pytest.mark.parametrize("value", ["-1", "99999999999999999999", "abc"])
def test_header_length_refused_as_triton_refuses_it(addrs, value):
    header, body = affine_binary(1, np.random.default_rng(3))
    triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", body, {ICL: value})
    assert triton[0] == 400, triton
    assert_same(triton, sidecar, f"header length {value}")


def test_output_requested_twice(addrs):
    """Triton answers it once, as the first listing asks; the sidecar used
    to refuse it."""
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}],
                       "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}, {"name": "OUTPUT0"}]}).encode()
    triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", body)
    assert triton[0] == 200, triton
    assert_same(triton, sidecar, "an output twice")


MALFORMED = [
    b"{", b'{"inputs":[', b'{"inputs":[1,]}', b'{"a":1,}', b'{"a" 1}', b'{"inputs":[]} x', b"[1 2]",
    b'{"a":"\\x"}', b'{"a":tru}', b'{"a":1e}', b'{"a":-}', b'{"a":"\\ud800"}', b'{"a":01}', b"{1:2}",
    b'{"a":1.}', b'{"a":1e400}', b'{"a":"\\u12G4"}', b'{"a":"x\x01"}', b"   ", b"\x00{", b"hello",
    b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}],"x":[1 2]}',
]


@pytest.mark.parametrize("body", MALFORMED, ids=[repr(b)[:30] for b in MALFORMED])
def test_malformed_json_answered_as_triton(addrs, body):
    """Triton's status (500) and message (rapidjson's reason and offset);
    the sidecar used to answer 400 with its own."""
    triton, sidecar = both(addrs, "POST", "/v2/models/affine_fp32/infer", body)
    assert triton[0] == 500, triton
    assert_same(triton, sidecar, f"malformed {body!r}")


def test_malformed_json_for_a_controllable_model(addrs):
    """The same answer for a model the sidecar serves itself (the zoo's
    fashion: Triton's ensemble of that name answers the same JSON error)."""
    for body in (b'{"inputs":[', b'{"a":tru}'):
        triton, sidecar = both(addrs, "POST", "/v2/models/fashion/infer", body)
        assert_same(triton, sidecar, f"malformed {body!r} to fashion")


def compact(entry):
    return json.dumps(entry, separators=(",", ":")).encode()


def test_repository_index(addrs):
    """Triton's entries byte for byte, in its order, less the ensembles the
    sidecar shadows, then the controllable models, written as Triton writes
    entries; a malformed body gets Triton's own answer."""
    for body in (b"", b"{}", b'{"ready":true}', b'{"ready":false}'):
        (t_status, _, t_body), (s_status, _, s_body) = both(addrs, "POST", "/v2/repository/index", body)
        assert t_status == s_status == 200
        triton_entries, sidecar_entries = json.loads(t_body), json.loads(s_body)
        # Compact JSON with the keys in their order is how Triton writes: the
        # bodies are exactly the entries, so every byte is accounted for.
        assert t_body == b"[" + b",".join(map(compact, triton_entries)) + b"]"
        assert s_body == b"[" + b",".join(map(compact, sidecar_entries)) + b"]", s_body[:500]
        # The sidecar's list is Triton's, some left out, then its own.
        k, i = 0, 0
        while k < len(sidecar_entries):
            while i < len(triton_entries) and triton_entries[i] != sidecar_entries[k]:
                i += 1
            if i == len(triton_entries):
                break
            k, i = k + 1, i + 1
        kept, ours = sidecar_entries[:k], sidecar_entries[k:]
        left_out = {e["name"] for e in triton_entries} - {e["name"] for e in kept}
        assert left_out <= {e["name"] for e in ours}, (left_out, ours)
        assert "fashion" in {e["name"] for e in ours}
        for e in ours:
            assert list(e) == ["name", "version", "state"] and e["version"] == "1" and e["state"] == "READY", e
    for body in (b'{"ready":tru', b'{"ready":"yes"}'):
        triton, sidecar = both(addrs, "POST", "/v2/repository/index", body)
        assert triton[0] == 500, triton
        assert_same(triton, sidecar, f"index with {body!r}")


def test_request_of_70_mib(addrs):
    """A 70 MiB request that Triton serves is served through the sidecar
    (limits.max_request_bytes used to default to 64 MiB)."""
    rows = (70 << 20) // 16
    rng = np.random.default_rng(4)
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [rows, 4],
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}).encode()
    body = header + x.tobytes()
    assert len(body) > 70 << 20
    for key in ("TRITON_HTTP_ADDR", "SIDECAR_HTTP_ADDR"):
        status, hdrs, data = http_request(addrs[key], "POST", "/v2/models/affine_fp32/infer", body, {ICL: str(len(header))},
                                          timeout=300)
        assert status == 200, (key, data[:300])
        hl = int(hdrs["inference-header-content-length"])
        np.testing.assert_array_equal(np.frombuffer(data[hl:], np.float32).reshape(rows, 4), 2 * x + 1)
        del data


# ---------------------------------------------------------------- dedicated instances


@pytest.fixture
def cleanup():
    actions = []
    yield actions
    for action in reversed(actions):
        try:
            action()
        except Exception as err:  # noqa: BLE001 - teardown goes on
            print(f"cleanup: {err!r}")


def passthrough_sidecar(triton, tmp_path, cleanup):
    """A sidecar with no controllable model in front of triton."""
    cfg = sidecar_config(triton, {}, [])
    del cfg["components"], cfg["models"]
    path = tmp_path / "sidecar.yaml"
    path.write_text(config_text(cfg))
    sidecar = Sidecar(path, tmp_path)
    cleanup.append(sidecar.stop)
    return sidecar.start()


def stream_error(addr, headers=None, timeout=10):
    """Opens a stream and sends nothing: the error the callback gets, and
    after how long; (None, timeout) when none comes."""
    answers = queue.Queue()
    client = grpcclient.InferenceServerClient(addr)
    start = time.monotonic()
    client.start_stream(callback=lambda result, error: answers.put(error), headers=headers)
    try:
        error = answers.get(timeout=timeout)
        return error, time.monotonic() - start
    except queue.Empty:
        return None, timeout
    finally:
        client.stop_stream()
        client.close()


def test_stream_refused_when_it_opens(tmp_path, cleanup):
    """Triton with --grpc-restricted-protocol refuses a stream without the
    key when it opens, before any request: so does the sidecar now (it used
    to open its own stream to Triton only with the first request)."""
    triton = Triton(TEST_REPO, tmp_path, ["--grpc-restricted-protocol=inference:infer-key=s3cret"])
    cleanup.append(triton.down)
    triton.start()
    sidecar = passthrough_sidecar(triton, tmp_path, cleanup)
    direct, took_direct = stream_error(triton.grpc)
    through, took_through = stream_error(sidecar.grpc)
    assert direct is not None, "Triton did not refuse the stream"
    assert through is not None, "the sidecar did not report Triton's refusal before any request"
    assert through.status() == direct.status(), (through, direct)
    assert through.message() == direct.message(), (through.message(), direct.message())
    assert took_through < 5, f"refused after {took_through:.1f} s"
    # With the key, the stream serves through the sidecar.
    error, _ = stream_error(sidecar.grpc, headers={"triton-grpc-protocol-infer-key": "s3cret"}, timeout=2)
    assert error is None, error


def test_triton_shutdown_not_held_by_the_sidecar(tmp_path, cleanup):
    """After a request through the sidecar, Triton's graceful shutdown takes
    about as long as after a direct one (about 4 s here): the sidecar closes
    idle connections to Triton after a second, where its keep-alive used to
    hold Triton for its whole exit timeout (30 s)."""
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}).encode()
    took = {}
    for way in ("direct", "sidecar"):
        workdir = tmp_path / way
        workdir.mkdir()
        triton = Triton(TEST_REPO, workdir)
        cleanup.append(triton.down)
        triton.start()
        addr = triton.http
        if way == "sidecar":
            addr = passthrough_sidecar(triton, workdir, cleanup).http
        status, _, data = http_request(addr, "POST", "/v2/models/affine_fp32/infer", body)
        assert status == 200, data
        pid = triton.pid()
        start = time.monotonic()
        import os
        os.kill(pid, signal.SIGTERM)

        def gone():
            try:
                os.kill(pid, 0)
                return False
            except ProcessLookupError:
                return True

        wait_for(f"Triton ({way}) to exit", gone, timeout=60, interval=0.1)
        took[way] = time.monotonic() - start
    assert took["sidecar"] < took["direct"] + 5 and took["sidecar"] < 15, took
