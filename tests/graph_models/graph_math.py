"""The computations of the generated model repository of
tests/test_sidecar_graph.py, in numpy: the Python-backend models run them
(graph_ops.py), and the test composes them on its own, with W_p applied at
the corrected tensor, to compute what the sidecar must answer.

Shapes carry the batch dimension when the model batches and not otherwise:
every function works on the last axes.
"""

import numpy as np

SIDE = 4          # images are SIDE×SIDE, UINT8
PIXELS = SIDE * SIDE
D = 8             # the embedding's width, FP16
CLASSES = {"a": 5, "b": 3}
LABELS_B = ["cat", "dog", "bird"]
TOP = 2


def weights(seed=11):
    """The models' weights, drawn from seed: the encoder's W (D×PIXELS) and
    bias, and each head's matrix and bias."""
    rng = np.random.default_rng(seed)
    w = {"enc_w": rng.normal(scale=0.4, size=(D, PIXELS)).astype(np.float32),
         "enc_b": rng.normal(scale=0.2, size=D).astype(np.float32)}
    for task, k in CLASSES.items():
        w[f"head_{task}_w"] = rng.normal(scale=1.5, size=(k, D)).astype(np.float32)
        w[f"head_{task}_b"] = rng.normal(scale=0.3, size=k).astype(np.float32)
    return w


def prep(image):
    """Pre-processing: UINT8 image → FP32 pixels in [-0.5, 0.5], flattened."""
    x = image.astype(np.float32) / np.float32(255) - np.float32(0.5)
    return x.reshape(*image.shape[:-2], PIXELS)


def enc(pixels, mask, w):
    """The two-input backbone: FP16 embedding of the masked pixels."""
    x = pixels.astype(np.float32) * mask.astype(np.float32)
    return np.tanh(x @ w["enc_w"].T + w["enc_b"]).astype(np.float16)


def head(emb, w, task):
    """A task's head: FP32 scores of the (FP16) embedding."""
    return emb.astype(np.float32) @ w[f"head_{task}_w"].T + w[f"head_{task}_b"]


def softmax_topk(scores):
    """Post-processing: softmax probabilities (FP32) and the indices of the
    TOP largest (INT32), largest first."""
    s = scores.astype(np.float32)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    top = np.argsort(-probs, axis=-1, kind="stable")[..., :TOP].astype(np.int32)
    return probs, top


def lookup(scores, labels=LABELS_B):
    """Post-processing: the label of the largest score, BYTES [..., 1]."""
    idx = np.argmax(scores, axis=-1)
    out = np.array([labels[i].encode() for i in np.ravel(idx)], dtype=np.object_)
    return out.reshape(*np.shape(idx), 1)


def graph(image, mask, w, correct=None):
    """The pet_classifier ensemble, every step in order; correct (a
    function of the FP16 embedding, returning FP16) is applied to the
    embedding, the tensor the sidecar corrects. Returns the outputs by
    name, and the embedding the heads received."""
    emb = enc(prep(image), mask, w)
    if correct is not None:
        emb = correct(emb)
    scores_a = head(emb, w, "a")
    scores_b = head(emb, w, "b")
    probs_a, top_a = softmax_topk(scores_a)
    return {"probs_a": probs_a, "top_a": top_a, "scores_b": scores_b, "label_b": lookup(scores_b)}, emb
