#!/usr/bin/env bash
# make release VERSION=vX.Y.Z: tags the current commit as a release, locally
# (it never pushes). Refuses, with one line on stderr, unless
#   - VERSION has the form vX.Y.Z and no tag of that name exists,
#   - CHANGELOG.md has the heading "## [X.Y.Z] - YYYY-MM-DD",
#   - the work tree is clean (the tag names exactly what was checked),
#   - api/VERSION.apidiff, the committed API baseline, equals the API and
#     the API check passes (scripts/api.sh).
# Procedure: move the Unreleased entries of CHANGELOG.md under the new
# version's heading, `make api-snapshot VERSION=vX.Y.Z`, commit both, then
# `make release VERSION=vX.Y.Z` and `git push origin vX.Y.Z`.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-}
die() { echo "release: $*" >&2; exit 1; }
[[ $ver =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]] || die "VERSION must be vX.Y.Z (got \"$ver\"): make release VERSION=v0.3.0"
num=${BASH_REMATCH[1]}
grep -qE "^## \[v?${num//./\\.}\] - [0-9]{4}-[0-9]{2}-[0-9]{2}" CHANGELOG.md ||
  die "CHANGELOG.md has no \"## [$num] - YYYY-MM-DD\" heading: describe the release there first"
if git rev-parse -q --verify "refs/tags/$ver" >/dev/null; then die "tag $ver exists already"; fi
[[ -z $(git status --porcelain) ]] || die "the work tree is not clean: commit or stash first ($(git status --porcelain | wc -l) paths)"
if ! out=$(scripts/api.sh same "$ver" 2>&1 && scripts/api.sh check 2>&1); then
  die "API check failed: $(echo "$out" | grep '^api:' | tail -1 | sed 's/^api: //; s/ (above)//') (details: make api-check)"
fi
git tag -a "$ver" -m "quorumlock $ver"
echo "release: tagged $(git rev-parse --short HEAD) as $ver (annotated, local); publish with: git push origin $ver"
