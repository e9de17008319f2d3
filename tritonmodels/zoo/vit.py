"""The zoo's models: a small ViT backbone and a CLIP-style cosine head.

Backbone input:  `image`, float32 [N, 1, 28, 28], pixel values in [0, 1]
                 (uint8 / 255, ink bright on a dark background).
Backbone output: `feature`, float32 [N, D], the class token after the final
                 LayerNorm. This is the tensor ReACT corrects.
Head input:      `feature`, float32 [N, D].
Head output:     `logits`, float32 [N, C] = scale * normalize(z) @ normalize(W)^T.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {"dim": 64, "depth": 4, "heads": 4, "patch": 7, "mlp_ratio": 2, "image": 28}
HEAD_SCALE = 20.0  # fixed logit scale of every head, like CLIP's 1/temperature


class Block(nn.Module):
    """Pre-norm transformer block with hand-written attention (exports cleanly)."""

    def __init__(self, dim, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.dim = dim
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x):
        n, t, d = x.shape
        h = self.heads
        hd = self.dim // h
        q, k, v = self.qkv(self.norm1(x)).reshape(n, t, 3, h, hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * hd ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(n, t, self.dim))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, dim=64, depth=4, heads=4, patch=7, mlp_ratio=2, image=28):
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(1, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.dim = dim

    def forward(self, image):
        x = self.embed((image - 0.5) / 0.5).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x[:, 0])


class CosineHead(nn.Module):
    """logits = scale * cos(feature, class weight). The weight is fixed after probing."""

    def __init__(self, dim, classes, scale=HEAD_SCALE):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(classes, dim) * dim ** -0.5)
        self.scale = scale

    def forward(self, feature):
        return self.scale * F.normalize(feature, dim=-1) @ F.normalize(self.weight, dim=-1).t()


def layer_groups(model):
    """Parameter names grouped by layer, for layer-wise AdaMerging.

    Groups: the embedding (patch conv, cls, pos), each block, the final norm.
    """
    groups = {"embed": [], "norm": []}
    for name, _ in model.named_parameters():
        if name.startswith("blocks."):
            groups.setdefault("block" + name.split(".")[1], []).append(name)
        elif name.startswith("norm."):
            groups["norm"].append(name)
        else:
            groups["embed"].append(name)
    order = ["embed"] + sorted(g for g in groups if g.startswith("block")) + ["norm"]
    return [(g, groups[g]) for g in order]
