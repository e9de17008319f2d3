"""common.py's subset() and train_mode(), and export.py's halve_weights().

Runs in the zoo venv (.cache/zoo-venv: torch, onnx, onnxruntime) with the
other zoo tests; needs no data and no built zoo.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import common  # tritonmodels/zoo, on the path by pyproject.toml
import effnet
import export
import zooenv

ZOO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

torch.set_num_threads(1)


@pytest.mark.parametrize("n, limit", [(10, None), (10, 10), (10, 25), (0, None)])
def test_subset_all_rows(n, limit):
    """No limit, or one at least n: every row, in order."""
    assert common.subset(n, limit, "mnist/train").tolist() == list(range(n))


@pytest.mark.parametrize("n, limit", [(12000, 2000), (500, 499), (100, 1), (7, 3)])
def test_subset_is_a_sorted_sample(n, limit):
    got = common.subset(n, limit, "mnist/train").tolist()
    assert len(got) == limit
    assert got == sorted(set(got))  # ascending, no repeats
    assert 0 <= got[0] and got[-1] < n
    assert got == common.subset(n, limit, "mnist/train").tolist()  # seeded


def test_subset_depends_on_the_name():
    a = common.subset(1000, 100, "mnist/train").tolist()
    b = common.subset(1000, 100, "fashion/train").tolist()
    assert a != b


def test_subset_is_the_same_in_every_process():
    """The seed comes from the name alone (not Python's per-process hash)."""
    code = "import common; print(common.subset(1000, 20, 'greek/calib').tolist())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": ZOO_DIR, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")}
    assert len(outs) == 1
    assert outs.pop().strip() == str(common.subset(1000, 20, "greek/calib").tolist())


def test_subset_of_a_class_grouped_split():
    """A split grouped by class in source order (mnist's train split): a
    prefix would hold the first classes only; the subset holds every class
    in about its share."""
    labels = torch.arange(10).repeat_interleave(1200)  # 12000 rows, class by class
    idx = common.subset(len(labels), 2000, "mnist/train")
    assert idx.tolist() != list(range(2000))
    counts = torch.bincount(labels[idx], minlength=10)
    assert counts.min().item() >= 140 and counts.max().item() <= 260  # 200 expected, ±4 sd


class Mixed(torch.nn.Module):
    """Every kind of module train_mode must tell apart."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn2d = torch.nn.BatchNorm2d(4)
        self.drop = torch.nn.Dropout(0.5)
        self.bn1d = torch.nn.BatchNorm1d(4)
        self.ln = torch.nn.LayerNorm(4)
        self.inner = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))

    def forward(self, x):
        x = self.bn2d(self.conv(x)).mean(dim=(2, 3))
        return self.inner(self.ln(self.bn1d(self.drop(x))))


@pytest.mark.parametrize("start_training", [False, True])
def test_train_mode(start_training):
    """BatchNorm stays in eval mode (its running statistics unchanged by a
    forward pass); every other module trains, whatever mode it was in."""
    model = Mixed().train(start_training)
    assert common.train_mode(model) is model
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert len(bns) == 3
    for name, m in model.named_modules():
        assert m.training == (m not in bns), name
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model(torch.randn(8, 1, 6, 6, generator=torch.Generator().manual_seed(0)))
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_train_mode_effnet():
    model = common.train_mode(effnet.EfficientNetLite0().eval())
    kinds = {(type(m).__name__, m.training) for m in model.modules()}
    assert ("BatchNorm2d", False) in kinds and ("BatchNorm2d", True) not in kinds
    assert model.training and all(b.training for b in model.blocks)


class Small(torch.nn.Module):
    """Initializers either side of export.FP16_MIN_ELEMENTS (1024), and a
    large integer one (Gather's indices) that must stay as it is."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.fc1 = torch.nn.Linear(32, 32)  # weight: 1024 elements, halved
        self.register_buffer("idx", torch.randint(0, 32, (1100,), generator=gen))
        self.fc2 = torch.nn.Linear(1100, 3)  # 3300, halved
        self.fc3 = torch.nn.Linear(3, 341)  # 1023, kept
        for p in self.parameters():
            p.data = torch.randn(p.shape, generator=gen) * 0.3

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x))[:, self.idx])))


def _run(path, x):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_halve_weights(tmp_path):
    model = Small().eval()
    x = torch.randn(5, 32, generator=torch.Generator().manual_seed(1))
    fp32, fp16 = tmp_path / "fp32.onnx", tmp_path / "fp16.onnx"
    torch.onnx.export(model, x, str(fp32), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=export.OPSET)
    fp16.write_bytes(fp32.read_bytes())
    export.halve_weights(str(fp16))

    before = {i.name: i for i in onnx.load(str(fp32)).graph.initializer}
    graph = onnx.load(str(fp16)).graph
    onnx.checker.check_model(onnx.load(str(fp16)))
    after = {i.name: i for i in graph.initializer}
    casts = {n.output[0]: n for n in graph.node if n.op_type == "Cast"}
    halved = 0
    for name, init in before.items():
        size = int(np.prod(init.dims))
        if init.data_type == onnx.TensorProto.FLOAT and size >= 1024:
            half = after[name + "_fp16"]
            assert half.data_type == onnx.TensorProto.FLOAT16 and list(half.dims) == list(init.dims)
            assert name not in after
            assert list(casts[name].input) == [half.name]
            assert casts[name].attribute[0].i == onnx.TensorProto.FLOAT
            halved += 1
        else:
            assert after[name] == init, name  # untouched
            assert name not in casts
    assert halved == 2
    # The casts come first, so the graph stays topologically sorted.
    assert [n.op_type for n in graph.node[:halved]] == ["Cast"] * halved
    assert fp16.stat().st_size < fp32.stat().st_size - 2 * (1024 + 3300) + 1024

    # onnxruntime: the FP32 model with its two large weights rounded to
    # float16, computed here in numpy.
    p = {k: v.detach().numpy().astype(np.float64) for k, v in model.named_parameters()}
    for k in ("fc1.weight", "fc2.weight"):
        p[k] = p[k].astype(np.float16).astype(np.float64)
    xs = x.numpy().astype(np.float64)
    h = np.maximum(xs @ p["fc1.weight"].T + p["fc1.bias"], 0)[:, model.idx.numpy()]
    want = np.maximum(h @ p["fc2.weight"].T + p["fc2.bias"], 0) @ p["fc3.weight"].T + p["fc3.bias"]
    got, full = _run(fp16, x.numpy()), _run(fp32, x.numpy())
    assert got.dtype == np.float32 and got.shape == (5, 341)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    rel = np.linalg.norm(got - full) / np.linalg.norm(full)
    assert 0 < rel < export.MAX_REL_ERR_FP16
    assert _run(fp16, x.numpy()[:2]).shape == (2, 341)  # the batch stays dynamic


@pytest.mark.parametrize("environ, name, suffix", [
    ({}, "vit", ""),
    ({"ZOO_NAME": ""}, "vit", ""),
    ({"ZOO_NAME": "effnet"}, "effnet", "-effnet"),
])
def test_settings_defaults(environ, name, suffix):
    """Without ZOO_DATA, ZOO_WORK or ZOO_OUT the stages use the checkout's
    own directories, named for the zoo."""
    root = os.path.dirname(os.path.dirname(ZOO_DIR))
    cfg = zooenv.settings(environ)
    assert cfg.name == name
    assert cfg.data == os.path.join(root, ".cache", "zoo-data")
    assert cfg.work == os.path.join(root, ".cache", "zoo-models" + suffix)
    assert cfg.zoo == cfg.zoo_default == os.path.join(root, "tritonmodels", "zoo" + suffix)
    assert cfg.threads == 1


def test_settings_from_the_environment():
    cfg = zooenv.settings({"ZOO_NAME": "effnet", "ZOO_DATA": "/d", "ZOO_WORK": "/w", "ZOO_OUT": "/o",
                           "ZOO_THREADS": "3"})
    assert (cfg.data, cfg.work, cfg.zoo, cfg.threads) == ("/d", "/w", "/o", 3)
    assert cfg.zoo_default.endswith(os.path.join("tritonmodels", "zoo-effnet"))
    assert cfg.readme == os.path.join(cfg.zoo_default, "README.md")


def test_settings_refuse_an_unknown_zoo():
    with pytest.raises(SystemExit, match="unknown ZOO_NAME 'resnet'"):
        zooenv.settings({"ZOO_NAME": "resnet"})


def test_import_reads_no_environment():
    """Importing the stages' modules reads no ZOO_* variable: a bad ZOO_NAME
    fails when a stage asks for its settings, not at import."""
    code = "import common, export, merge; print('imported')"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ZOO_DIR, "ZOO_NAME": "resnet"})
    assert run.returncode == 0 and run.stdout.strip() == "imported", run.stderr
