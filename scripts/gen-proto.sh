#!/usr/bin/env bash
# Generates the Go code for our Triton protocol files:
#   triton/proto/*.proto  ->  OUTDIR (default triton/tritonpb)
# with protoc and the protoc-gen-go / protoc-gen-go-grpc versions pinned by
# scripts/setup.d/05-protoc.sh (run `make setup` first).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${1:-triton/tritonpb}"
TOOLS="$PWD/.tools/bin"
for tool in protoc-gen-go protoc-gen-go-grpc; do
	if [ ! -x "$TOOLS/$tool" ]; then
		echo "gen-proto: $TOOLS/$tool is missing; run scripts/setup.d/05-protoc.sh" >&2
		exit 1
	fi
done
command -v protoc >/dev/null || { echo "gen-proto: protoc is missing; run scripts/setup.d/05-protoc.sh" >&2; exit 1; }

mkdir -p "$OUT"
rm -f "$OUT"/*.pb.go
# paths=source_relative with -I triton/proto puts the files directly in OUT,
# whatever go_package says.
PATH="$TOOLS:$PATH" protoc \
	-I triton/proto \
	--go_out="$OUT" --go_opt=paths=source_relative \
	--go-grpc_out="$OUT" --go-grpc_opt=paths=source_relative \
	triton/proto/*.proto
