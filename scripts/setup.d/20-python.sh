#!/usr/bin/env bash
# The project's Python virtual environment, .venv at the repository root,
# with the pinned packages of scripts/requirements.txt: nvidia-pytriton (which
# bundles tritonserver 2.51.0), tritonclient (with perf_analyzer), numpy,
# onnxruntime, safetensors, pytest, Pillow.
#
# Idempotent: .venv/.requirements.sha256 records the hash of the requirements
# file (and of the interpreter) that the venv was last installed from; when it
# matches, this step only checks that the venv still runs.
#
# The venv is made from Debian's /usr/bin/python3.11, not from pyenv's python3:
# the Python backend stub links to Debian's libpython3.11.so.1.0 and takes its
# standard library from the venv's base prefix, so both must be the same
# Python (see scripts/triton-up).
set -euo pipefail
cd "$(dirname "$0")/../.."

base_python=/usr/bin/python3.11
venv=.venv
requirements=scripts/requirements.txt
stamp=$venv/.requirements.sha256

[ -x "$base_python" ] || { echo "python: $base_python missing (run setup.d/10-debian.sh)" >&2; exit 1; }

key="$(sha256sum "$requirements" | cut -d' ' -f1) $("$base_python" -c 'import sys; print(sys.version.split()[0])')"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && "$venv/bin/python" -c '' 2>/dev/null; then
	echo "python: $venv up to date"
	exit 0
fi

# A venv made from another interpreter (e.g. pyenv's) is replaced.
if [ -e "$venv" ] && ! grep -qx 'home = /usr/bin' "$venv/pyvenv.cfg" 2>/dev/null; then
	echo "python: $venv was not made from $base_python; recreating it"
	rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
	echo "python: creating $venv"
	"$base_python" -m venv "$venv"
fi

echo "python: installing $requirements"
"$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check -r "$requirements"

# Remove what the requirements no longer name, so the venv is exactly the lock.
"$venv/bin/python" - "$requirements" <<'PY'
import re, subprocess, sys
from importlib import metadata

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

wanted = set()
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if line:
        wanted.add(norm(re.split(r"[\[=<>!~; ]", line, 1)[0]))
keep = wanted | {"pip", "setuptools"}
extra = sorted({norm(d.metadata["Name"]) for d in metadata.distributions()} - keep)
if extra:
    print("python: removing packages not in the requirements:", " ".join(extra))
    subprocess.check_call([sys.executable, "-m", "pip", "uninstall", "-y", "-q", *extra])
PY

# Check what the Triton scripts rely on.
"$venv/bin/python" -c 'import pytriton, tritonclient.grpc, tritonclient.http, numpy, onnxruntime, safetensors, pytest, PIL'
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pyver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
stub="$site/pytriton/tritonserver/python_backend_stubs/$pyver/triton_python_backend_stub"
[ -x "$site/pytriton/tritonserver/bin/tritonserver" ] || { echo "python: tritonserver binary missing" >&2; exit 1; }
[ -x "$stub" ] || { echo "python: no Python backend stub for Python $pyver" >&2; exit 1; }
if ldd "$stub" | grep -q 'not found'; then
	echo "python: the Python backend stub misses libraries:" >&2
	ldd "$stub" | grep 'not found' >&2
	exit 1
fi
# perf_analyzer (shipped in the tritonclient 2.51.0 wheel) links to
# libcudart.so.12, even for CPU-only runs: point its RUNPATH at the one from
# nvidia-cuda-runtime-cu12, so that .venv/bin/perf_analyzer runs as it is.
pa="$venv/bin/perf_analyzer"
if ! "$pa" --version >/dev/null 2>&1; then
	patchelf --set-rpath "\$ORIGIN/../lib/python$pyver/site-packages/nvidia/cuda_runtime/lib" "$pa"
	"$pa" --version >/dev/null 2>&1 || { echo "python: $pa does not run" >&2; exit 1; }
fi

echo "$key" >"$stamp"
echo "python: $venv ready"
