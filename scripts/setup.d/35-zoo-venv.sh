#!/usr/bin/env bash
# The zoo's Python environment (.cache/zoo-venv: Debian's torch and onnx plus
# tritonmodels/zoo/requirements.txt), which make test uses to check the
# second zoo's EfficientNet-Lite0 against an independent implementation and
# its strict weight loading (tritonmodels/zoo/tests). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

exec bash scripts/lib/zoo-venv.sh
