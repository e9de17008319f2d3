"""make_repo.py --zoo effnet, without Triton and without the effnet zoo's
manifest: render(), write() and --check on a synthetic manifest laid out
like tritonmodels/zoo/manifest.json at D = 1280.

The effnet repository has the vit repository's models less its extras (the
FP16 models, the preprocessing model and its ensembles); its ONNX files and
components file are tritonmodels/zoo-effnet's, and its Python models import
the vit repository's shared runner (tritonmodels/repo/onnx_runner.py).
Paths are checked by resolving them as their readers do, not as strings.
"""
import json
import pathlib
import runpy
import sys

import pytest

import make_repo  # tritonmodels/make_repo.py
from testenv import ROOT

D = 1280
TASKS = {"fashion": 10, "mnist": 10, "digits": 10, "letters": 26, "greek": 24, "fontdigits": 10}
BACKBONES = ["backbone_base", "backbone_ta", "backbone_ties", "backbone_adamerging"] + [f"expert_{t}" for t in TASKS]


def manifest():
    files = {}
    for name in BACKBONES:
        source = {"backbone_base": "base"}.get(name, name.replace("backbone_", "merged/").replace("expert_", "expert/"))
        files[name] = {"kind": "backbone", "source": source, "path": f"onnx/{name}.onnx"}
    for t in TASKS:
        files[f"head_{t}"] = {"kind": "head", "task": t, "path": f"onnx/head_{t}.onnx"}
    return {
        "format": 1, "D": D,
        "backbone": {"input": {"name": "image", "dtype": "float32", "shape": [-1, 1, 28, 28], "range": [0, 1]},
                     "output": {"name": "feature", "dtype": "float32", "shape": [-1, D]}},
        "head": {"input": "feature", "output": "logits", "scale": 20.0,
                 "form": "scale * normalize(feature) @ normalize(W)^T"},
        "tasks": {t: {"num_classes": c} for t, c in TASKS.items()},
        "files": files,
    }


# The effnet repository's models, written out.
MODELS = sorted(BACKBONES + [f"head_{t}" for t in TASKS] + list(TASKS) + [f"{t}_react" for t in TASKS]
                + ["react_adamerging"])


def render():
    return make_repo.render(manifest(), zoo_dir="zoo-effnet", extras=False)


def models(files):
    return sorted({p.split("/")[0] for p in files})


def parameter(config, key):
    line = next(line for line in config.splitlines() if f'key: "{key}"' in line)
    return line.split('string_value: "')[1].split('"')[0]


def test_models():
    """The vit repository's models less the FP16 and encoded-image ones."""
    files = render()
    assert models(files) == MODELS
    assert not [p for p in files if "fp16" in p or "preprocess" in p]
    assert all(f"{m}/config.pbtxt" in files for m in MODELS)


def test_paths_resolve_into_zoo_effnet():
    """onnx_file is relative to the repository's root (onnx_runner.py);
    the react backend's components relative to the model's version
    directory: both must land in tritonmodels/zoo-effnet/."""
    repo, zoo = ROOT / "tritonmodels" / "repo-effnet", ROOT / "tritonmodels" / "zoo-effnet"
    files = render()
    for name in BACKBONES + [f"head_{t}" for t in TASKS]:
        onnx_file = parameter(files[f"{name}/config.pbtxt"], "onnx_file")
        assert (repo / onnx_file).resolve() == zoo / "onnx" / f"{name}.onnx"
    components = parameter(files["react_adamerging/config.pbtxt"], "components")
    assert components == "../../../zoo-effnet/components.safetensors"
    assert (repo / "react_adamerging" / "1" / components).resolve() == zoo / "components.safetensors"


def test_dims():
    files = render()
    for name in BACKBONES:
        assert "dims: [ 1, 28, 28 ]" in files[f"{name}/config.pbtxt"]
        assert f"dims: [ {D} ]" in files[f"{name}/config.pbtxt"]
    for t, classes in TASKS.items():
        head = files[f"head_{t}/config.pbtxt"]
        assert f"dims: [ {D} ]" in head and f"dims: [ {classes} ]" in head
        assert f"dims: [ {classes} ]" in files[f"{t}_react/config.pbtxt"]
    assert files["react_adamerging/config.pbtxt"].count(f"dims: [ {D} ]") == 2


def test_shared_with_vit():
    """Every ensemble and the react model are the vit layout's, but for the
    zoo's directory; the Python models differ only in the runner they load."""
    vit = make_repo.render(manifest(), zoo_dir="zoo-effnet", extras=True)
    effnet = render()
    assert set(effnet) < set(vit)
    for path, text in effnet.items():
        if not path.endswith("model.py"):
            assert text == vit[path], path


def test_model_py_loads_the_shared_runner(tmp_path, monkeypatch):
    """A generated 1/model.py, run from its place in a copy of the tree,
    imports tritonmodels/repo/onnx_runner.py (here a stub)."""
    repo = tmp_path / "tritonmodels" / "repo-effnet"
    for rel, text in render().items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    runner = tmp_path / "tritonmodels" / "repo" / "onnx_runner.py"
    runner.parent.mkdir(parents=True)
    runner.write_text("class TritonPythonModel:\n    WHERE = __file__\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # model.py adds its runner's directory
    monkeypatch.delitem(sys.modules, "onnx_runner", raising=False)
    for name in ("backbone_base", "head_greek"):
        loaded = runpy.run_path(str(repo / name / "1" / "model.py"))
        assert pathlib.Path(loaded["TritonPythonModel"].WHERE).resolve() == runner.resolve()


@pytest.fixture
def effnet_zoo(tmp_path, monkeypatch):
    """make_repo's effnet zoo, with its manifest and repository under
    tmp_path/tritonmodels (the real extras flag kept)."""
    real_manifest, real_repo, extras = make_repo.ZOOS["effnet"]
    assert real_manifest == ROOT / "tritonmodels" / "zoo-effnet" / "manifest.json"
    assert real_repo == ROOT / "tritonmodels" / "repo-effnet"
    here = tmp_path / "tritonmodels"
    path = here / "zoo-effnet" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(manifest()))
    repo = here / "repo-effnet"
    monkeypatch.setattr(make_repo, "HERE", here)
    monkeypatch.setitem(make_repo.ZOOS, "effnet", (path, repo, extras))
    return repo


def check(monkeypatch, zoo):
    monkeypatch.setattr(sys, "argv", ["make_repo.py", "--zoo", zoo, "--check"])
    return make_repo.main()


def test_write_and_check(effnet_zoo, monkeypatch, capsys):
    repo = effnet_zoo
    assert check(monkeypatch, "effnet") == 1  # nothing written yet
    monkeypatch.setattr(sys, "argv", ["make_repo.py", "--zoo", "effnet"])
    assert make_repo.main() == 0
    assert sorted(p.parent.name for p in repo.glob("*/config.pbtxt")) == MODELS
    react = repo / "react_adamerging" / "config.pbtxt"
    components = parameter(react.read_text(), "components")
    assert (react.parent / "1" / components).resolve() == effnet_zoo.parent / "zoo-effnet" / "components.safetensors"
    assert make_repo.differences("effnet") == []
    assert check(monkeypatch, "effnet") == 0

    (repo / "head_greek" / "config.pbtxt").write_text("edited\n")
    stale = repo / "backbone_old"
    stale.mkdir()
    (stale / "config.pbtxt").write_text(make_repo.HEADER)
    assert make_repo.differences("effnet") == ["not generated: backbone_old/config.pbtxt",
                                               "differs: head_greek/config.pbtxt"]
    assert check(monkeypatch, "effnet") == 1
    make_repo.write("effnet")
    assert not stale.exists() and make_repo.differences("effnet") == []
    capsys.readouterr()
