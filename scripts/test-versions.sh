#!/usr/bin/env bash
# The library's own tests (the root module alone, GOWORK=off, no -race) at
# the newest edge of what it supports, which scripts/test.sh does not reach:
#   - the newest Go toolchain, fetched from the module proxy like any
#     module (GOTOOLCHAIN=$NEW_GO), where test.sh uses the machine's Go;
#   - the newest go-redis v9 the proxy serves, where test.sh's run of the
#     library alone uses the oldest (the one go.mod requires). The upgrade
#     happens in a copy of go.mod/go.sum (-modfile): the committed
#     requirement never changes.
# Both in one run by default (what a user on the newest of both gets, in
# half the time of two runs); `toolchain` or `go-redis` runs one edge alone,
# to tell which one broke something.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off QUORUMLOCK_REQUIRE_REDIS=1
NEW_GO=${NEW_GO:-go1.27.3}
what=${1:-both}
case $what in both | toolchain | go-redis) ;; *)
  echo "usage: scripts/test-versions.sh [both|toolchain|go-redis]" >&2
  exit 2
  ;;
esac
summary="${TMPDIR:-/tmp}/quorumlock-testsummary"
go build -o "$summary" ./internal/testsummary
flags=()
if [[ $what != go-redis ]]; then export GOTOOLCHAIN=$NEW_GO; fi
if [[ $what != toolchain ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp go.mod go.sum "$tmp/"
  if ! out=$(go get -modfile="$tmp/go.mod" github.com/redis/go-redis/v9@latest 2>&1); then
    echo "test-versions: go get github.com/redis/go-redis/v9@latest: $out" >&2
    exit 1
  fi
  flags=(-modfile="$tmp/go.mod")
fi
echo "== the library alone on $(go version | cut -d' ' -f3), go-redis $(go list "${flags[@]}" -m -f '{{.Version}}' github.com/redis/go-redis/v9)"
set +e
go test "${flags[@]}" -count=1 -timeout 15m -json ./... | "$summary"
st=("${PIPESTATUS[@]}")
set -e
for x in "${st[@]}"; do
  if [[ $x != 0 ]]; then exit "$x"; fi
done
