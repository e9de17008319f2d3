"""FEATURE = W_v [input_ids, mask] in float64, rounded to float32, with
W_v[j, k] = sin(v (j + 1) + 0.37 k) for model version v: the test computes
the same map from its definition."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        v = float(args["model_version"])
        j, k = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
        self.w = np.sin(v * (j + 1) + 0.37 * k)

    def execute(self, requests):
        responses = []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "input_ids").as_numpy()
            mask = pb_utils.get_input_tensor_by_name(request, "mask").as_numpy()
            x = np.concatenate([ids.astype(np.float64), mask.astype(np.float64)], axis=1)
            z = (x @ self.w.T).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("feature", z)]))
        return responses
