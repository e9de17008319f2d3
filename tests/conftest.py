"""Fixtures every end-to-end test module shares: the binaries, built once
per session, and the Triton scripts/test.sh starts.

Paths and the skip-or-fail rule live in testenv.py; the pytest settings
(test paths, the import path) in pyproject.toml.
"""

import pytest

from testenv import binary, deploytest_command, env


@pytest.fixture(scope="session")
def calibrate():
    """bin/calibrate as the work tree builds it now (make build, once a
    session; a stale binary would test old code)."""
    return binary("calibrate")


@pytest.fixture(scope="session")
def sidecar_bin():
    """bin/sidecar as the work tree builds it now (make build)."""
    return binary("sidecar")


@pytest.fixture(scope="session")
def alerteval(tmp_path_factory):
    """docker/deploytest's alerteval, which evaluates Prometheus rule files
    with Prometheus' own rule manager and PromQL engine, built once a
    session."""
    return deploytest_command("alerteval", tmp_path_factory.mktemp("deploytest-bin"))


@pytest.fixture(scope="session")
def triton_addr():
    """The gRPC address of the Triton scripts/test.sh starts (both model
    repositories); each module checks the models it needs (testenv.need_models)."""
    return env("TRITON_GRPC_ADDR")
