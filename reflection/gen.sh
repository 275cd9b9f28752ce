#!/usr/bin/env bash
# Regenerates reflectionpb's Go code from reflectionpb/reflection.proto,
# compiled under the path it has in the protobuf registry,
# erpc/reflection/v1/reflection.proto.
# It needs protoc; protoc-gen-go (the version cmd/protoc-gen-go-erpc pins)
# and protoc-gen-go-erpc are built from this tree. With an argument, it
# writes under that directory (as if it were the repository's root)
# instead of in place. ERPC_GEN_BIN may name a directory holding the two
# plug-ins, built already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${ERPC_GEN_BIN:-}  # a directory with the two plug-ins already built
if [ -z "$bin" ]; then
  bin=$tmp/bin
  (cd "$root/cmd/protoc-gen-go-erpc" &&
    go build -o "$bin/protoc-gen-go-erpc" . &&
    go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)
fi
mkdir -p "$tmp/src/erpc/reflection/v1" "$out"
cp "$here/reflectionpb/reflection.proto" "$tmp/src/erpc/reflection/v1/"
protoc -I "$tmp/src" \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out="$out" --go_opt=module=github.com/erpc-go/erpc \
  --plugin=protoc-gen-go-erpc="$bin/protoc-gen-go-erpc" --go-erpc_out="$out" --go-erpc_opt=module=github.com/erpc-go/erpc \
  erpc/reflection/v1/reflection.proto
