"""For each name in NAME, VALUE is "<version> <file>" of that module, or the
value of sys.prefix / sys.executable / sys.version, or "missing: <error>"."""

import importlib
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

SYS_NAMES = ("sys.prefix", "sys.executable", "sys.version")


def describe(name):
    if name in SYS_NAMES:
        return str(getattr(sys, name.split(".", 1)[1]))
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # report, do not fail the request
        return f"missing: {exc}"
    return f"{getattr(module, '__version__', '?')} {getattr(module, '__file__', '?')}"


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            names = pb_utils.get_input_tensor_by_name(request, "NAME").as_numpy()
            values = [describe(n.decode() if isinstance(n, bytes) else str(n)) for n in names.reshape(-1)]
            out = np.array([v.encode() for v in values], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("VALUE", out)]))
        return responses
