#!/usr/bin/env bash
# The project's test command: formatting, go vet and go test -race over
# every Go module in the repository. Extra arguments go to go test
# (e.g. ./test.sh -run TestSim -sim.seeds=5000).
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

status=0
for mod in $(find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort); do
  echo "== $mod"
  (cd "$mod" && go vet ./... && go test -race -count=1 ./... "$@") || status=1
done
exit $status
