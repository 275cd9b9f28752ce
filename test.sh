#!/usr/bin/env bash
# The project's test command: formatting, go vet and go test -race over
# every Go module in the repository, staticcheck over each (installed at a
# pinned version if missing), then the protocol property tests (TestSim*) at
# full strength (1000 seeds each) and only there: without the race
# detector, which adds nothing to the single-threaded engine and makes them
# ten times slower. Extra arguments go to every go test (e.g. ./test.sh
# -run TestEcho).
#
# The jobs (one per module, the portable UDP build, the property tests) run
# ERPC_TEST_JOBS at a time (default 2), longest first; each job's output is
# printed whole when it ends, with its time. Run one after another, the
# jobs kept one of two processors busy on average (14 min, 15 CPU-min);
# two at once take 7.5 min on a 2-processor machine. Three at once on a
# machine already loaded made timing-bound smoke runs fail and the
# property tests take 10 minutes instead of 2: ERPC_TEST_JOBS=1 there.
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

logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT

# module runs go vet, staticcheck and the race tests of one module. The
# protocol property tests (TestSim*) run once, in their own job, without
# the race detector: they drive the single-threaded engine on one goroutine.
module() {
  cd "$1" && go vet ./... && "$staticcheck" ./... && go test -race -count=1 -skip '^TestSim' ./... "${@:2}"
}
# portable: the fallback UDP path run here, and the root module's code and
# tests type-checked for the platforms without the Linux fast paths.
portable() {
  go test -race -count=1 -tags erpc_portable ./transport/udp "$@" &&
    GOOS=darwin go vet ./... && GOOS=windows go vet ./...
}
property() { go test -count=1 -run '^TestSim' ./internal/proto "$@"; }

# The jobs, longest first (measured: the root module about 4 min, the
# benchmark tool's smoke runs 3, the property tests 2, AF_XDP 1.5).
names=() cmds=()
add() { names+=("$1"); cmds+=("${*:2}"); }
add "module ." module .
add "module ./cmd/erpc-bench" module ./cmd/erpc-bench
add "protocol property tests, ${ERPC_SIM_SEEDS:-1000} seeds each" property
for mod in $(find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort); do
  case $mod in .|./cmd/erpc-bench) continue ;; esac
  add "module $mod" module "$mod"
done
add "portable: the UDP fallback (what darwin and windows run) on this machine; go vet for darwin and windows" portable

status=0 next=0 running=0 reported=0
declare -A started
finish() { # print every job that has ended and not yet been reported
  local i
  for i in "${!started[@]}"; do
    [ -e "$logs/$i.rc" ] || continue
    read -r rc secs <"$logs/$i.rc"
    echo "== ${names[$i]} ($( [ "$rc" = 0 ] && echo ok || echo FAILED), ${secs}s)"
    cat "$logs/$i.log"
    [ "$rc" = 0 ] || status=1
    unset "started[$i]"; running=$((running - 1)); reported=$((reported + 1))
  done
}
while [ "$reported" -lt "${#names[@]}" ]; do
  while [ "$running" -lt "${ERPC_TEST_JOBS:-2}" ] && [ "$next" -lt "${#names[@]}" ]; do
    i=$next; next=$((next + 1)); started[$i]=1; running=$((running + 1))
    ( t0=$SECONDS; rc=0; ${cmds[$i]} "$@" >"$logs/$i.log" 2>&1 || rc=$?
      echo "$rc $((SECONDS - t0))" >"$logs/$i.rc.tmp" && mv "$logs/$i.rc.tmp" "$logs/$i.rc" ) &
  done
  wait -n 2>/dev/null || true
  finish
done
exit $status
