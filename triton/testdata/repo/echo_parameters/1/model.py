"""PARAMETERS = the request's parameters as a JSON string; INPUT0 is ignored."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            params = np.array([request.parameters().encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("PARAMETERS", params)]))
        return responses
