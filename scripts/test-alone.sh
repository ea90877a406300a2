#!/usr/bin/env bash
# The library's own tests (with the CLI's and the console's, which share
# its module) outside the workspace (GOWORK=off, no -race), built with the
# oldest go-redis its go.mod accepts: what a user who adds only quorumlock,
# or installs its CLI, gets (the workspace runs the newest any module asks
# for).
# v9.17.0 hung a read-write test and v9.17-9.18 refused a cluster
# transaction with CROSSSLOT, unseen while only the workspace ran.
# scripts/test.sh runs it after its race pass; CI runs it beside
# make test-functions and make test-versions (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off QUORUMLOCK_REQUIRE_REDIS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/testsummary" ./internal/testsummary
echo "== the library alone, at its oldest go-redis ($(go list -m -f '{{.Version}}' github.com/redis/go-redis/v9))"
set +e
go test -count=1 -timeout 15m -json ./... | "$tmp/testsummary"
st=("${PIPESTATUS[@]}")
set -e
for x in "${st[@]}"; do
  if [[ $x != 0 ]]; then exit "$x"; fi
done
