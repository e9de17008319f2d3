"""Where a zoo build reads and writes, from the environment, read when a
stage asks (settings()), never when a module is imported.

scripts/zoo-build.sh sets the variables from `make zoo ZOO=<name>`:
  ZOO_NAME   which zoo: "vit" (the small one CI and `make demo` use) or
             "effnet" (EfficientNet-Lite0, tritonmodels/zoo-effnet)
  ZOO_DATA   the data sets (default .cache/zoo-data)
  ZOO_WORK   the stages' checkpoints (default .cache/zoo-models[-<name>])
  ZOO_OUT    where the committed artefacts go: onnx/, manifest.json,
             results.json (default tritonmodels/zoo[-<name>])
  ZOO_THREADS torch's threads (default 1: the machine is shared)

This module needs no torch, so that evaluate.py (run in the main venv)
shares it with the training stages.
"""
import dataclasses
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NAMES = ("vit", "effnet")


@dataclasses.dataclass(frozen=True)
class Settings:
    """A zoo build's name and directories."""

    name: str  # "vit" or "effnet"
    data: str  # the data sets
    work: str  # checkpoints of the stages
    zoo: str  # where the committed artefacts go
    zoo_default: str  # the checkout's own directory for them
    threads: int  # torch threads

    @property
    def readme(self):
        """The README whose accuracy table evaluate.py keeps current."""
        if self.name == "vit":
            return os.path.join(ROOT, "tritonmodels", "README.md")
        return os.path.join(self.zoo_default, "README.md")


def settings(environ=None):
    """The settings the environment (os.environ by default) gives; an
    unknown ZOO_NAME exits with a message."""
    env = os.environ if environ is None else environ
    name = env.get("ZOO_NAME") or "vit"
    if name not in NAMES:
        raise SystemExit(f"zoo: unknown ZOO_NAME {name!r} (want vit or effnet)")
    suffix = "" if name == "vit" else "-" + name
    zoo_default = os.path.join(ROOT, "tritonmodels", "zoo" + suffix)
    return Settings(
        name=name,
        data=env.get("ZOO_DATA") or os.path.join(ROOT, ".cache", "zoo-data"),
        work=env.get("ZOO_WORK") or os.path.join(ROOT, ".cache", "zoo-models" + suffix),
        zoo=env.get("ZOO_OUT") or zoo_default,
        zoo_default=zoo_default,
        threads=int(env.get("ZOO_THREADS") or "1"),
    )
