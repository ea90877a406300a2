#!/usr/bin/env bash
# Runs every test of the module with the race detector against real
# redis-server processes. Prints one line per package, the output of failed
# tests and why tests were skipped; fails if any Redis-backed test skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export QUORUMLOCK_REQUIRE_REDIS=1
echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
go build -o "${TMPDIR:-/tmp}/quorumlock-testsummary" ./internal/testsummary
echo "== go test -race ./..."
set +e
# The root module, then the bench module (its own go.mod: the peers it
# compares against never enter the library's requirements).
{
  go test -race -count=1 -timeout 30m -json ./...
  r1=$?
  (cd bench && go vet ./... && go test -race -count=1 -timeout 10m -json ./...)
  r2=$?
  exit $(( r1 != 0 ? r1 : r2 ))
} | "${TMPDIR:-/tmp}/quorumlock-testsummary"
st=("${PIPESTATUS[@]}")
test_rc=${st[0]} rc=${st[1]}
set -e
if [[ $rc == 0 && $test_rc != 0 ]]; then rc=$test_rc; fi
exit $rc
