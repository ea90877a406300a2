#!/usr/bin/env bash
# The library's own tests (the root module alone, GOWORK=off, no -race)
# at the edges scripts/test.sh does not reach:
#   - on the newest Go toolchain, fetched from the module proxy like any
#     module (GOTOOLCHAIN=$NEW_GO), next to the machine's Go;
#   - at the newest go-redis v9 the proxy serves (scripts/test.sh runs the
#     oldest, the one go.mod requires). The upgrade happens in a copy of
#     go.mod/go.sum (-modfile): the committed requirement never changes.
# Usage: scripts/test-versions.sh [toolchain|go-redis]  (both by default)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off QUORUMLOCK_REQUIRE_REDIS=1
NEW_GO=${NEW_GO:-go1.27.3}
summary="${TMPDIR:-/tmp}/quorumlock-testsummary"
go build -o "$summary" ./internal/testsummary
rc=0
run() { # go test with the given environment/flags, one line per package
  set +e
  "$@" -count=1 -timeout 15m -json ./... | "$summary"
  local st=("${PIPESTATUS[@]}")
  set -e
  for x in "${st[@]}"; do
    if [[ $rc == 0 && $x != 0 ]]; then rc=$x; fi
  done
}
what=${1:-all}
if [[ $what == all || $what == toolchain ]]; then
  echo "== the library alone on $(GOTOOLCHAIN=$NEW_GO go version | cut -d' ' -f3)"
  run env GOTOOLCHAIN="$NEW_GO" go test
fi
if [[ $what == all || $what == go-redis ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp go.mod "$tmp/go.mod"
  cp go.sum "$tmp/go.sum"
  go get -modfile="$tmp/go.mod" github.com/redis/go-redis/v9@latest >/dev/null 2>&1 ||
    { echo "test-versions: go get github.com/redis/go-redis/v9@latest failed" >&2; exit 1; }
  echo "== the library alone at the newest go-redis ($(go list -modfile="$tmp/go.mod" -m -f '{{.Version}}' github.com/redis/go-redis/v9))"
  run go test -modfile="$tmp/go.mod"
fi
exit $rc
