#!/usr/bin/env bash
# Installs the protobuf code generators at pinned versions:
#   - protoc from Debian (protobuf-compiler), only when it is missing;
#   - protoc-gen-go and protoc-gen-go-grpc into .tools/bin (git-ignored).
# protoc-gen-go is pinned to the google.golang.org/protobuf version in go.mod,
# so the generated code always matches the runtime it is compiled against.
# Idempotent: every step is skipped when its result is already in place.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The pinned protoc-gen-go-grpc release. Bump it deliberately, then run
# `make proto` and commit the regenerated code.
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
# The protoc major.minor the committed code was generated with (Debian 12).
PROTOC_WANT=3.21

if ! command -v protoc >/dev/null 2>&1; then
	echo "05-protoc: installing protobuf-compiler from Debian"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null
fi
have=$(protoc --version | awk '{print $2}')
case "$have" in
"$PROTOC_WANT".*) ;;
*) echo "05-protoc: warning: protoc $have, the committed code was generated with $PROTOC_WANT.x" >&2 ;;
esac

PROTOBUF_VERSION=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
TOOLS="$PWD/.tools/bin"
mkdir -p "$TOOLS"

# installed NAME VERSION: whether .tools/bin/NAME reports VERSION.
installed() {
	[ -x "$TOOLS/$1" ] && [ "$("$TOOLS/$1" --version 2>/dev/null | awk '{print $NF}')" = "$2" ]
}

if ! installed protoc-gen-go "$PROTOBUF_VERSION"; then
	echo "05-protoc: go install protoc-gen-go@$PROTOBUF_VERSION"
	GOBIN="$TOOLS" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOBUF_VERSION"
fi
if ! installed protoc-gen-go-grpc "${PROTOC_GEN_GO_GRPC_VERSION#v}"; then
	echo "05-protoc: go install protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
	GOBIN="$TOOLS" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi
