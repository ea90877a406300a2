#!/usr/bin/env bash
# Runs every test of every module of the workspace (go.work: the library
# with the CLI and the console, chaos, jepsen-like with the lab, otelquorum,
# the console's browser test, guard/pgtest, bench)
# with the race detector against real
# redis-server processes. Prints one line per package, the output of failed
# tests and why tests were skipped; fails if any Redis-backed test skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export QUORUMLOCK_REQUIRE_REDIS=1
export GOWORK="$PWD/go.work" # every module, whatever the caller's GOWORK says
echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then echo "gofmt needed: $unformatted"; exit 1; fi
# In workspace mode this pattern matches the packages of every module.
all=github.com/quorumlock/quorumlock/...
go vet "$all"
# The library alone, outside the workspace: it builds with the oldest
# go-redis its go.mod asks for (the workspace picks the newest any module
# wants), and a scratch module importing only quorum stays small
# (quorum's TestConsumerModuleGraph).
GOWORK=off go vet ./...
go build -o "${TMPDIR:-/tmp}/quorumlock-testsummary" ./internal/testsummary
# Docker: an engine (the one that answers, or a private dockerd this run
# starts as root and stops at exit), `docker compose` and locally built
# images for the Docker backend's and docker-compose.yml's tests. Where no
# engine can run they skip with the reason (they fail instead under
# QUORUMLOCK_REQUIRE_DOCKER=1, as in CI); QUORUMLOCK_NO_DOCKER=1 skips it all.
echo "== docker"
source docker/engine.sh
trap docker_down EXIT
trap 'exit 130' INT TERM
docker_up
echo "== go test -race (every module: $(go list -m | wc -l))"
set +e
go test -race -count=1 -timeout 30m -json "$all" | "${TMPDIR:-/tmp}/quorumlock-testsummary"
st=("${PIPESTATUS[@]}")
test_rc=${st[0]} rc=${st[1]}
set -e
if [[ $rc == 0 && $test_rc != 0 ]]; then rc=$test_rc; fi
# The library's own tests again, outside the workspace, at the oldest
# go-redis its go.mod accepts (scripts/test-alone.sh). CI runs that part
# beside its other library-alone runs instead (QUORUMLOCK_SKIP_ALONE=1,
# .ci/run): it mostly waits on Redis, and so do they.
if [[ ${QUORUMLOCK_SKIP_ALONE:-} != 1 ]]; then
  set +e
  scripts/test-alone.sh
  x=$?
  set -e
  if [[ $rc == 0 && $x != 0 ]]; then rc=$x; fi
fi
exit $rc
