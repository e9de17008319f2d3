"""The peer of the react step: the same correction as a Triton user would write
it today without this product, in the Python backend with numpy.

Two models share this file (each model's 1/model.py imports one class):

- StepModel, an ensemble step between backbone and head (pystep_*): it takes
  the backbone's feature Z (B x D, FP32) and returns Z @ W_p.T, with W_p
  chosen by the request's `react-preference` parameter (Triton passes an
  ensemble request's parameters to every step). A batch is grouped by
  preference: one matrix product per group.
- BLSModel, one Python model that does the whole pipeline with Business Logic
  Scripting (*_pybls): it calls the backbone with pb_utils.InferenceRequest,
  corrects the feature with numpy, calls the head and returns the head's
  output. The requests of a batch go to the backbone and to the head as one
  request each.

W_p is not solved here: the W_p of each preference the deployment serves is
precomputed (`calibrate solve --out DIR/SPEC.npy`, D x D float32, z_hat =
W @ z) and loaded at initialize from the directory named by the model
parameter `wp_dir` (relative to the model's version directory): every
DIR/*.npy whose name (without .npy) is a preference spec such as
t0=0.6,t1=0.4. A request's spec is matched after the same normalisation as
the product's (weights divided by their sum, zero weights and order ignored);
a request with no preference passes the feature unchanged; a spec with no
precomputed W_p is an error naming the ones there are.

numpy only; FP32 features only.
"""

import json
import math
import pathlib

import numpy as np
import triton_python_backend_utils as pb_utils

PARAM = "react-preference"


def preference_key(spec):
    """The normalised form of a spec task=weight[,task=weight...]: a sorted
    tuple of (task, weight / sum), zero weights left out. ValueError if the
    spec does not parse or its weights do not sum to a positive number."""
    weights = {}
    for item in spec.split(","):
        task, sep, value = item.strip().partition("=")
        task = task.strip()
        if not sep or not task or task in weights:
            raise ValueError(f"bad preference {spec!r}: want task=weight[,task=weight...]")
        w = float(value)
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"bad preference {spec!r}: weight of {task} must be finite and >= 0")
        weights[task] = w
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"bad preference {spec!r}: the weights must sum to more than 0")
    return tuple(sorted((t, round(w / total, 12)) for t, w in weights.items() if w > 0))


class Corrections:
    """The precomputed W_p of a model: loaded from wp_dir, looked up by the
    request's preference parameter (the raw string cached after the first
    match)."""

    def __init__(self, args, dim):
        config = json.loads(args["model_config"])
        rel = config["parameters"]["wp_dir"]["string_value"]
        base = pathlib.Path(args["model_repository"]) / args["model_version"]
        wp_dir = (base / rel).resolve()
        self.by_key = {}
        for path in sorted(wp_dir.glob("*.npy")):
            w = np.load(path)
            if w.shape != (dim, dim) or w.dtype != np.float32:
                raise pb_utils.TritonModelException(f"{path}: want a {dim}x{dim} float32 W_p, got {w.shape} {w.dtype}")
            # Rows are samples: z_hat = z @ W.T, with W.T laid out in C order once.
            self.by_key[preference_key(path.stem)] = np.ascontiguousarray(w.T)
        if not self.by_key:
            raise pb_utils.TritonModelException(f"no W_p files (*.npy) in {wp_dir}")
        self.names = sorted(",".join(f"{t}={w:g}" for t, w in k) for k in self.by_key)
        self.by_spec = {}

    def lookup(self, request):
        """The transposed W_p for the request's preference, None for no
        preference; ValueError for an unknown or malformed one."""
        params = json.loads(request.parameters() or "{}")
        spec = params.get(PARAM)
        if spec is None or spec == "":
            return None
        wt = self.by_spec.get(spec)
        if wt is None:
            wt = self.by_key.get(preference_key(spec))
            if wt is None:
                raise ValueError(f"no W_p for preference {spec!r}; precomputed: {'; '.join(self.names)}")
            if len(self.by_spec) < 4096:
                self.by_spec[spec] = wt
        return wt


def correct(zs, wts):
    """zs[i] @ wts[i] for each request i (wts[i] None: zs[i] unchanged), one
    product per distinct W_p over the concatenated rows of its requests."""
    out = list(zs)
    groups = {}
    for i, wt in enumerate(wts):
        if wt is not None:
            groups.setdefault(id(wt), (wt, []))[1].append(i)
    for wt, idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = zs[idx[0]] @ wt
            continue
        y = np.concatenate([zs[i] for i in idx]) @ wt
        start = 0
        for i in idx:
            out[i] = y[start:start + len(zs[i])]
            start += len(zs[i])
    return out


def error_response(message):
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))


class StepModel:
    """The ensemble step: feature in, W_p @ feature out (input and output names
    from config.pbtxt)."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.input = config["input"][0]["name"]
        self.output = config["output"][0]["name"]
        self.corrections = Corrections(args, config["input"][0]["dims"][-1])

    def execute(self, requests):
        responses = [None] * len(requests)
        live, zs, wts = [], [], []
        for i, r in enumerate(requests):
            try:
                wts.append(self.corrections.lookup(r))
            except ValueError as e:
                responses[i] = error_response(str(e))
                continue
            live.append(i)
            zs.append(pb_utils.get_input_tensor_by_name(r, self.input).as_numpy())
        for i, z in zip(live, correct(zs, wts)):
            responses[i] = pb_utils.InferenceResponse([pb_utils.Tensor(self.output, np.asarray(z, dtype=np.float32))])
        return responses


class BLSModel:
    """The whole pipeline in one Python model: backbone, numpy correction, head.
    Parameters: backbone, feature (the backbone's output), head, head_input
    (the head's input that takes the corrected feature), wp_dir. The model's
    one input goes to the backbone under the same name; its one output is
    the head's output of the same name."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        p = {k: v["string_value"] for k, v in config["parameters"].items()}
        self.backbone, self.feature = p["backbone"], p["feature"]
        self.head, self.head_input = p["head"], p["head_input"]
        self.input = config["input"][0]["name"]
        self.output = config["output"][0]["name"]
        self.corrections = Corrections(args, int(p["dim"]))

    def call(self, model, name, tensor, output):
        req = pb_utils.InferenceRequest(model_name=model, requested_output_names=[output],
                                        inputs=[pb_utils.Tensor(name, tensor)])
        resp = req.exec()
        if resp.has_error():
            raise RuntimeError(f"{model}: {resp.error().message()}")
        return pb_utils.get_output_tensor_by_name(resp, output).as_numpy()

    def execute(self, requests):
        responses = [None] * len(requests)
        live, xs, wts = [], [], []
        for i, r in enumerate(requests):
            try:
                wts.append(self.corrections.lookup(r))
            except ValueError as e:
                responses[i] = error_response(str(e))
                continue
            live.append(i)
            xs.append(pb_utils.get_input_tensor_by_name(r, self.input).as_numpy())
        if not live:
            return responses
        try:
            z = self.call(self.backbone, self.input, np.concatenate(xs), self.feature)
            zs, start = [], 0
            for x in xs:
                zs.append(z[start:start + len(x)])
                start += len(x)
            zhat = np.concatenate(correct(zs, wts)).astype(np.float32, copy=False)
            y = self.call(self.head, self.head_input, zhat, self.output)
        except RuntimeError as e:
            for i in live:
                responses[i] = error_response(str(e))
            return responses
        start = 0
        for i, x in zip(live, xs):
            responses[i] = pb_utils.InferenceResponse([pb_utils.Tensor(self.output, y[start:start + len(x)])])
            start += len(x)
        return responses
