"""The one Python-backend runner of the generated model repository of
tests/test_sidecar_graph.py: config.pbtxt's parameter "op" names the
computation of graph_math.py, and <model>/weights.npz, or a version's own
<model>/<version>/weights.npz, holds the weights. Each request is computed
on its own (a dynamic batcher only hands over several at once)."""

import json
import pathlib

import numpy as np
import triton_python_backend_utils as pb_utils

import graph_math


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.name = config["name"]
        self.op = config["parameters"]["op"]["string_value"]
        self.inputs = [t["name"] for t in config["input"]]
        self.outputs = [(t["name"], pb_utils.triton_string_to_numpy(t["data_type"])) for t in config["output"]]
        self.task = config["parameters"].get("task", {}).get("string_value", "")
        # A version's own weights (<model>/<version>/weights.npz), else
        # the model's.
        model_dir = pathlib.Path(args["model_repository"])
        path = model_dir / args["model_version"] / "weights.npz"
        if not path.is_file():
            path = model_dir / "weights.npz"
        self.w = dict(np.load(path)) if path.is_file() else {}

    def compute(self, xs):
        if self.op == "prep":
            return [graph_math.prep(xs[0])]
        if self.op == "enc":
            return [graph_math.enc(xs[0], xs[1], self.w)]
        if self.op == "head":
            return [graph_math.head(xs[0], self.w, self.task)]
        if self.op == "softmax_topk":
            return list(graph_math.softmax_topk(xs[0]))
        if self.op == "lookup":
            return [graph_math.lookup(xs[0])]
        raise ValueError(f"unknown op {self.op}")

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                xs = [pb_utils.get_input_tensor_by_name(request, n).as_numpy() for n in self.inputs]
                ys = self.compute(xs)
                tensors = [pb_utils.Tensor(n, np.ascontiguousarray(np.asarray(y).astype(dt))) for (n, dt), y in zip(self.outputs, ys)]
                responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            except Exception as err:  # noqa: BLE001 - every failure is the request's error
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(f"{self.name}: {err}")))
        return responses
