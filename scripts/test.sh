#!/usr/bin/env bash
# Runs every test of the module with the race detector against real
# redis-server processes, and fails if any Redis-backed test was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export QUORUMLOCK_REQUIRE_REDIS=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
echo "== go test -race ./..."
set +e
go test -race -count=1 -timeout 30m -v ./... >"$log" 2>&1
rc=$?
set -e
# Per-package results and failures, not the whole verbose log.
grep -E '^(ok|FAIL|panic:)|^\s*--- (FAIL|SKIP)' -A0 "$log" || true
if grep -qE '^\s*--- FAIL|^panic:' "$log"; then
  echo "== failures"; grep -E -A25 '^\s*--- FAIL|^panic:' "$log" | head -300
fi
skipped=$(grep -A2 -E '^\s*--- SKIP' "$log" | grep -E '^\s+.*(redis-server|localredis)' || true)
if [[ -n $skipped ]]; then
  echo "Redis-backed tests were skipped:"; echo "$skipped"; exit 1
fi
passed=$(grep -cE '^\s*--- PASS' "$log" || true)
failed=$(grep -cE '^\s*--- FAIL' "$log" || true)
nskip=$(grep -cE '^\s*--- SKIP' "$log" || true)
echo "tests: $passed passed, $failed failed, $nskip skipped"
exit $rc
