"""OUTPUT0 = INPUT0 for BF16 tensors, passed through with DLPack (no NumPy)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            y = pb_utils.Tensor.from_dlpack("OUTPUT0", x.to_dlpack())
            responses.append(pb_utils.InferenceResponse([y]))
        return responses
