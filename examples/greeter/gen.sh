#!/usr/bin/env bash
# Regenerates greeterpb from proto/greeter/v1/greeter.proto with protoc and
# three plug-ins: protoc-gen-go and protoc-gen-go-grpc (the versions
# cmd/protoc-gen-go-erpc pins) and protoc-gen-go-erpc, all built from this
# tree. With an argument, it writes under that directory (as if it were this
# module's root) instead of in place. ERPC_GEN_BIN may name a directory
# holding the three plug-ins, built already. grpc_compat=true: the erpc
# server interface's streaming methods take grpc-go's stream types, so one
# Greeter serves both, and the erpc client is a greeterpb.GreeterClient.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${ERPC_GEN_BIN:-}
if [ -z "$bin" ]; then
  bin=$tmp/bin
  (cd "$root/cmd/protoc-gen-go-erpc" &&
    go build -o "$bin/protoc-gen-go-erpc" . &&
    go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go &&
    go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc)
fi
mod=github.com/erpc-go/erpc/examples/greeter
mkdir -p "$out"
protoc -I "$here/proto" \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out="$out" --go_opt=module=$mod \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" --go-grpc_out="$out" --go-grpc_opt=module=$mod \
  --plugin=protoc-gen-go-erpc="$bin/protoc-gen-go-erpc" --go-erpc_out="$out" --go-erpc_opt=module=$mod,grpc_compat=true \
  greeter/v1/greeter.proto
