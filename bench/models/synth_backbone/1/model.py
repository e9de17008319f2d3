"""synth_backbone: a synthetic D=768 backbone, feature = tanh(x @ M).

M is a fixed 768x768 float32 matrix drawn at initialize from numpy's PCG64
seeded with the config parameter `seed`, scaled by 1/sqrt(768) so that a
standard normal x gives pre-activations of unit variance. numpy only.

The dynamic batcher hands several requests to `execute` at once: their inputs
are concatenated along the batch axis, multiplied in one product and split
again.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        seed = int(config["parameters"]["seed"]["string_value"])
        d_in = config["input"][0]["dims"][0]
        d_out = config["output"][0]["dims"][0]
        rng = np.random.default_rng(seed)
        self.m = rng.standard_normal((d_in, d_out), dtype=np.float32) / np.float32(np.sqrt(d_in))

    def execute(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(r, "x").as_numpy() for r in requests]
        y = np.tanh(np.concatenate(xs) @ self.m)
        responses, start = [], 0
        for x in xs:
            part = y[start:start + len(x)]
            start += len(x)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("feature", part)]))
        return responses
