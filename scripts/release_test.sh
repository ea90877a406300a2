#!/usr/bin/env bash
# Tests make release and make api-check in a fresh clone of this
# repository's HEAD (uncommitted changes are not part of it): each refusal
# is one line naming its cause, an incompatible API change fails until
# CHANGELOG.md lists it under the next major version, and a clean clone
# gets an annotated tag, locally. Takes seconds (apidiff is cached by go run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/c"
cd "$tmp/c"
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
# The newest release: the first dated heading (a heading without a date,
# e.g. the next major version's while its changes gather, is not one).
ver=v$(sed -nE 's/^## \[v?([0-9]+\.[0-9]+\.[0-9]+)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}.*/\1/p' CHANGELOG.md | head -1)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_refusal WHAT WORD CMD...: CMD fails and its own stderr is one line
# containing WORD (make adds its "*** Error" line after it).
expect_refusal() {
  local what=$1 word=$2 err
  shift 2
  if err=$("$@" 2>&1 >/dev/null); then fail "$what: succeeded"; return; fi
  err=$(grep -v '^make: \*\*\*' <<<"$err")
  if [[ $(wc -l <<<"$err") != 1 ]]; then fail "$what: not one line: $err"; fi
  if ! grep -qF -- "$word" <<<"$err"; then fail "$what: no \"$word\" in: $err"; fi
  echo "ok   $what: $err"
}

expect_refusal "no version" "VERSION must be" make -s release
expect_refusal "version without changelog heading" "CHANGELOG.md has no" make -s release VERSION=v99.0.0
echo '// dirty' >>drift/doc.go
expect_refusal "dirty tree" "not clean" make -s release VERSION="$ver"
git checkout -q drift/doc.go

# An incompatible change: the check fails until CHANGELOG.md lists it
# under the next major version; release refuses either way (the API no
# longer equals the release's baseline).
sed -i 's/^const Granularity = 2 \* time.Millisecond$/const Granularity = 3 * time.Millisecond/' drift/drift.go
grep -q '^const Granularity = 3 ' drift/drift.go || fail "could not change drift.Granularity"
if out=$(make -s api-check 2>&1); then fail "api-check passed an incompatible change: $out"; fi
grep -q 'drift.Granularity' <<<"$out" || fail "api-check does not name drift.Granularity: $out"
major=$(( $(cut -d. -f1 <<<"${ver#v}") + 1 )).0.0
sed -i "s/^## \[Unreleased\]/## [Unreleased]\n\n## [$major]\n\n- drift.Granularity is 3 ms./" CHANGELOG.md
out=$(make -s api-check 2>&1) || fail "api-check failed with the change listed under [$major]: $out"
git commit -qam "an incompatible change"
expect_refusal "API differs from the baseline" "API check failed" make -s release VERSION="$ver"
git reset -q --hard HEAD~1

# The procedure release.sh states, for the next patch version: its
# CHANGELOG heading, its API baseline, one commit, the tag.
IFS=. read -r ma mi pa <<<"${ver#v}"
ver=v$ma.$mi.$((pa + 1))
sed -i "s/^## \[Unreleased\]/## [Unreleased]\n\n## [${ver#v}] - $(date -u +%F)/" CHANGELOG.md
make -s api-snapshot VERSION="$ver" >/dev/null || fail "api-snapshot $ver failed"
git add -A && git commit -qm "release $ver"
make -s release VERSION="$ver" || fail "release $ver in a clean clone failed"
[[ $(git cat-file -t "$ver" 2>/dev/null) == tag ]] || fail "no annotated tag $ver"
[[ $(git rev-parse "$ver^{commit}") == $(git rev-parse HEAD) ]] || fail "tag $ver is not HEAD"
[[ -z $(git ls-remote --tags origin "$ver") ]] || fail "tag $ver reached origin"
expect_refusal "tag exists" "exists already" make -s release VERSION="$ver"

if ((fails)); then echo "release_test: $fails failed"; exit 1; fi
echo "release_test: ok"
