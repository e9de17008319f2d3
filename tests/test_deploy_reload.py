"""The Kubernetes deployment's reload path (docs/deploy.md), end to end:
two sidecar processes (bin/sidecar), as two replicas of the Deployment,
in front of the real Triton of scripts/test.sh, each reading its
configuration from a directory laid out as the kubelet lays out a ConfigMap
volume (sidecar.yaml -> ..data/sidecar.yaml, ..data -> ..<timestamp>), and
their components files from a shared directory, as the react-components
volume. Under load on both (gRPC and HTTP, keyed requests of an A/B
experiment):

- a new components file is made as the calibration Jobs make it
  (docker/k8s/calibrate, calibrate-merge): `calibrate fit --triton <the
  sidecar> --shard i/2 --resume` per shard, through the sidecar (the models
  pass through), then `calibrate merge` into a new file on the shared
  volume;
- each replica's ConfigMap is updated in turn, by the kubelet's own
  sequence (a new timestamped directory, a ..data_tmp link renamed over
  ..data, the old directory removed), to name the new file and new arm
  weights;
- no request fails; every answer has the arm of the old or the new split
  for its key, and the last ones the new; both replicas reload once and
  then give every key the same arm, with the new components file's W_p.
"""

import collections
import os
import shutil
import subprocess
import threading
import time
import types

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from assign import assign  # experiment/assign.py
from sidecar_helpers import (IMAGE, LOGITS, Sidecar, assert_close, config_text, images, metric, reference_logits,
                             scrape, sidecar_config, wait_for)
from testenv import ZOO, binary, env

EXPERIMENT = "deploy-ab"
OLD_ARMS = [("merged", 50), ("react", 50)]
NEW_ARMS = [("merged", 20), ("react", 80)]
ARM_PREFERENCE = {"merged": None, "react": "fashion=1"}


def _config(triton, components, arms):
    models = [{"name": "fashion_ab", "components": "main",
               "backbone": {"model": "backbone_adamerging", "output": "feature"},
               "heads": [{"task": "fashion", "model": "head_fashion"}]}]
    experiments = [{"name": EXPERIMENT, "models": ["fashion_ab"], "key": {"header": "x-user-id"},
                    "arms": [{"name": a, "weight": w, "preference": ARM_PREFERENCE[a] or "none"} for a, w in arms]}]
    return sidecar_config(triton, {"main": (components, None)}, models, experiments=experiments)


class ConfigMapVolume:
    """A directory laid out and updated as the kubelet's AtomicWriter does
    for a ConfigMap volume (k8s.io/kubernetes/pkg/volume/util/atomic_writer.go)."""

    def __init__(self, path, files):
        self.path, self.version = path, 0
        path.mkdir(parents=True)
        self.current = self._write(files)
        (path / "..data").symlink_to(self.current)
        for name in files:
            (path / name).symlink_to(f"..data/{name}")

    def _write(self, files):
        self.version += 1
        name = time.strftime(f"..%Y_%m_%d_%H_%M_%S.{os.getpid()}{self.version}")
        (self.path / name).mkdir()
        for f, text in files.items():
            (self.path / name / f).write_text(text)
        return name

    def update(self, files):
        """New timestamped directory, ..data_tmp -> it, renamed over ..data,
        the old directory removed."""
        old, self.current = self.current, self._write(files)
        (self.path / "..data_tmp").symlink_to(self.current)
        os.rename(self.path / "..data_tmp", self.path / "..data")
        shutil.rmtree(self.path / old)


class Load:
    """Keyed requests to one sidecar from two threads (gRPC, HTTP) until
    stopped: (key, arm, logits) per answer, and every failure."""

    def __init__(self, side, x):
        self.side, self.x = side, x
        self.answers, self.errors = [], []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(p,)) for p in ("grpc", "http")]

    def _run(self, protocol):
        module = grpcclient if protocol == "grpc" else httpclient
        client = module.InferenceServerClient(self.side.grpc if protocol == "grpc" else self.side.http)
        i = 0
        while not self.stop.is_set():
            key = f"user-{i % 97}-{protocol}"
            try:
                self.answers.append((key, *infer(client, module, self.x, key)))
            except Exception as err:  # noqa: BLE001 - every failure fails the test
                self.errors.append(f"{protocol} {key}: {err!r}")
            i += 1
        client.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def wait(self, more, what):
        n = len(self.answers)
        wait_for(f"{what}: {more} more answers", lambda: len(self.answers) >= n + more, timeout=120)


def infer(client, module, x, key):
    """(arm, logits) of one keyed request to fashion_ab."""
    inp = module.InferInput(IMAGE, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = client.infer("fashion_ab", [inp], headers={"x-user-id": key})
    params = result.get_response(as_json=True)["parameters"] if module is grpcclient else \
        result.get_response()["parameters"]
    arm = params["react-arm"]
    arm = arm["string_param"] if isinstance(arm, dict) else arm
    return arm, result.as_numpy(LOGITS)


def _reloads(side):
    return metric(scrape(side.metrics), "react_config_reloads_total", result="success")


def _calibrate_through(side, tmp_path, out):
    """The calibration Jobs' commands, through the sidecar: two shards with
    --resume, then calibrate merge into out."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for task in ("fashion", "mnist"):
        np.save(inputs / f"{task}.npy", images(task, 48, seed=7, split="calib"))
    parts = []
    for i in range(2):
        part = tmp_path / "parts" / f"part-{i}.safetensors"
        part.parent.mkdir(exist_ok=True)
        cmd = [str(binary("calibrate")), "fit", f"--triton={side.grpc}", f"--inputs={inputs}",
               "--backbone-model=backbone_adamerging", "--backbone-output=feature", "--tasks=fashion,mnist",
               "--expert=fashion=expert_fashion", "--expert=mnist=expert_mnist", "--chunk=16",
               f"--shard={i}/2", f"--out={part}", "--resume", "--quiet"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{cmd}: {run.stderr}"
        parts.append(str(part))
    run = subprocess.run([str(binary("calibrate")), "merge", *parts, f"--out={out}"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_configmap_swap_two_replicas(tmp_path):
    triton = types.SimpleNamespace(grpc=env("TRITON_GRPC_ADDR"), http=env("TRITON_HTTP_ADDR"))
    volume = tmp_path / "react-components"
    volume.mkdir()
    v1 = volume / "components.safetensors"
    shutil.copyfile(ZOO / "components.safetensors", v1)
    old = config_text(_config(triton, v1, OLD_ARMS))
    pods = [ConfigMapVolume(tmp_path / f"pod-{p}" / "etc-react", {"sidecar.yaml": old}) for p in "ab"]
    sidecars = [Sidecar(p.path / "sidecar.yaml", tmp_path).start() for p in pods]
    direct = grpcclient.InferenceServerClient(triton.grpc)
    x = images("fashion", 1, seed=5)
    try:
        loads = [Load(s, x) for s in sidecars]
        with loads[0], loads[1]:
            for load in loads:
                load.wait(20, "before the update")
            # A new calibration, as the Jobs run it, into a new file.
            v2 = volume / "components-v2.safetensors"
            _calibrate_through(sidecars[0], tmp_path, v2)
            new = config_text(_config(triton, v2, NEW_ARMS))
            # The kubelets update the pods' volumes, not at the same moment.
            for pod, side, load in zip(pods, sidecars, loads):
                before = _reloads(side)
                pod.update({"sidecar.yaml": new})
                wait_for("the reload", lambda: _reloads(side) == before + 1, timeout=120)
                load.wait(20, "after the update")
            time.sleep(1)  # no second reload from the same update
            assert all(_reloads(s) == 1 for s in sidecars), [_reloads(s) for s in sidecars]
        for side, load in zip(sidecars, loads):
            assert load.errors == [], load.errors[:5]
            for key, arm, _ in load.answers:
                assert arm in (assign(EXPERIMENT, key, OLD_ARMS), assign(EXPERIMENT, key, NEW_ARMS)), (key, arm)
            for key, arm, _ in load.answers[-10:]:
                assert arm == assign(EXPERIMENT, key, NEW_ARMS), (key, arm)
            assert metric(scrape(side.metrics), "react_config_last_reload_successful") == 1
        # Both replicas: the same arm for the same key, the new split, and
        # the new components file's W_p.
        clients = [grpcclient.InferenceServerClient(s.grpc) for s in sidecars]
        arms = collections.Counter()
        want = {arm: reference_logits(direct, x, ARM_PREFERENCE[arm], v2) for arm in ARM_PREFERENCE}
        old_react = reference_logits(direct, x, "fashion=1", v1)
        assert np.abs(want["react"] - old_react).max() > 1e-3, "the two components files give the same W_p"
        for i in range(120):
            key = f"replica-{i}"
            got = [infer(c, grpcclient, x, key) for c in clients]
            assert [a for a, _ in got] == [assign(EXPERIMENT, key, NEW_ARMS)] * 2, key
            for arm, logits in got:
                assert_close(logits, want[arm], what=f"{key} ({arm})")
            arms[got[0][0]] += 1
        assert arms["react"] > 2 * arms["merged"] > 0, arms  # 80/20
        print(f"answers during the update: {[len(load.answers) for load in loads]}, none failed; arms after: {dict(arms)}")
        for c in clients:
            c.close()
    finally:
        direct.close()
        for s in sidecars:
            s.stop()
