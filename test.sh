#!/usr/bin/env bash
# The project's test command: formatting, go vet and go test -race over
# every Go module in the repository, staticcheck over each (installed at a
# pinned version if missing), then the protocol property tests (TestSim*) at
# full strength (1000 seeds each) and only there: without the race
# detector, which adds nothing to the single-threaded engine and makes them
# ten times slower. Extra arguments
# go to every go test (e.g. ./test.sh -run TestEcho).
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# Small files: no hand-written Go file over 500 lines (generated files,
# marked "Code generated ... DO NOT EDIT.", are exempt).
oversized=$(find . -name '*.go' -not -name '*.pb.go' -not -path './.git/*' -print0 |
  xargs -0 awk 'FNR==1{if(n>500&&!g)print n, f; f=FILENAME; n=0; g=0} /^\/\/ Code generated .* DO NOT EDIT\.$/{g=1} {n++} END{if(n>500&&!g)print n, f}')
if [ -n "$oversized" ]; then
  echo "hand-written Go files over 500 lines:"; echo "$oversized"; exit 1
fi

# staticcheck, pinned: a new release's new checks must not fail an old commit.
staticcheck=$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")
if ! "$staticcheck" -version 2>/dev/null | grep -q '(0.8.2)'; then
  echo "== installing staticcheck 0.8.2"
  (cd / && go install honnef.co/go/tools/cmd/staticcheck@v0.8.2) && staticcheck="$(go env GOPATH)/bin/staticcheck"
fi

status=0
for mod in $(find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort); do
  echo "== $mod: vet, staticcheck, race"
  # The protocol property tests (TestSim*) run once, below, without the
  # race detector: they drive the single-threaded engine on one goroutine.
  (cd "$mod" && go vet ./... && "$staticcheck" ./... && go test -race -count=1 -skip '^TestSim' ./... "$@") || status=1
done
echo "== udp: the portable fallback (what darwin and windows run), on this machine"
go test -race -count=1 -tags erpc_portable ./transport/udp "$@" || status=1
echo "== protocol property tests, ${ERPC_SIM_SEEDS:-1000} seeds each"
go test -count=1 -run '^TestSim' ./internal/proto "$@" || status=1
exit $status
