#!/usr/bin/env bash
# The library's API compatibility check (the root module's exported API
# against the last release's) and its committed baseline.
#
#   scripts/api.sh check             compare with the newest api/vX.Y.Z.apidiff
#   scripts/api.sh snapshot [VER]    write api/VER.apidiff (VER defaults to the
#                                    newest release heading of CHANGELOG.md)
#   scripts/api.sh same VER          exit 0 only if the API equals api/VER's
#
# The baseline is apidiff's export data, committed: tags do not travel with
# every clone, so nothing is looked up. An incompatible change fails the
# check unless CHANGELOG.md names it (as apidiff prints it, e.g.
# quorum.WithFencing or quorum.(*Mutex).Lock, with or without the "(*)")
# under the next major version's heading, e.g. "## [1.0.0]" after v0.3.0.
# localredis (local redis-server processes for tests and demos) and the
# example programs under examples/ are outside the stability promise and
# the check; internal/ is never compared.
set -euo pipefail
cd "$(dirname "$0")/.."
APIDIFF=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4
EXEMPT='^- (\./|package github\.com/quorumlock/quorumlock/)(localredis|examples/)'
export GOWORK=off
module=$(go list -m)

die() { echo "api: $*" >&2; exit 1; }

# apidiff OLD-export-data: prints apidiff's report on the working tree.
apidiff() {
  local out
  if ! out=$(go run "$APIDIFF" -m "$1" "$module" 2>&1); then
    echo "$out" | grep -v '^Ignoring internal package' >&2
    die "apidiff could not load the module (above)"
  fi
  echo "$out" | grep -v '^Ignoring internal package' | grep -Ev "$EXEMPT" || true
}

# newest release heading of CHANGELOG.md (## [X.Y.Z] - date), as vX.Y.Z
newest_release() {
  sed -nE 's/^## \[v?([0-9]+\.[0-9]+\.[0-9]+)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}.*/v\1/p' CHANGELOG.md | head -1
}

# newest baseline (api/vX.Y.Z.apidiff), as vX.Y.Z; with an argument, the
# newest one strictly older than that version
baseline() {
  local limit=${1:-} v best=
  for v in $(ls api/ 2>/dev/null | sed -nE 's/^(v[0-9]+\.[0-9]+\.[0-9]+)\.apidiff$/\1/p' | sort -V); do
    if [[ -z $limit ]] || [[ $v != "$limit" && $(printf '%s\n%s\n' "$v" "$limit" | sort -V | tail -1) == "$limit" ]]; then
      best=$v
    fi
  done
  echo "$best"
}

# check BASE: fail on an incompatible change CHANGELOG.md does not list
# under the next major version's heading.
check() {
  local base=$1 report incompatible major section name plain missing=()
  report=$(apidiff "api/$base.apidiff")
  incompatible=$(echo "$report" | sed -n '/^Incompatible changes:/,/^Compatible changes:/p' | grep '^- ' || true)
  if [[ -n $(echo "$report" | sed -n '/^Compatible changes:/,$p' | grep '^- ') ]]; then
    echo "api: compatible changes since $base:"
    echo "$report" | sed -n '/^Compatible changes:/,$p' | grep '^- '
  fi
  [[ -z $incompatible ]] && { echo "api: no incompatible change since $base"; return 0; }
  major=${base#v}; major=${major%%.*}; major=$((major + 1)).0.0
  section=$(awk -v h="^## \\\\[v?${major//./\\\\.}\\\\]" '
    $0 ~ h { on = 1; next } /^## / { on = 0 } on' CHANGELOG.md)
  while IFS= read -r line; do
    name=${line#- ./}; name=${name%%: *}
    plain=$(echo "$name" | tr -d '()*')
    if ! grep -qF -- "$name" <<<"$section" && ! grep -qF -- "$plain" <<<"$section"; then
      missing+=("$line")
    fi
  done <<<"$incompatible"
  if ((${#missing[@]})); then
    printf '%s\n' "${missing[@]}" >&2
    die "${#missing[@]} incompatible change(s) since $base (above) not listed under \"## [$major]\" in CHANGELOG.md"
  fi
  echo "api: incompatible changes since $base, each listed under [$major] in CHANGELOG.md:"
  echo "$incompatible"
}

case ${1:-} in
check)
  base=$(baseline)
  [[ -n $base ]] || die "no baseline in api/: run make api-snapshot"
  check "$base"
  ;;
snapshot)
  ver=${2:-$(newest_release)}
  [[ $ver =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "snapshot needs a version vX.Y.Z (CHANGELOG.md has no release heading?)"
  # A new release's API must be compatible with the previous release's
  # (or list its breaks): check before blessing it as the baseline.
  prev=$(baseline "$ver")
  if [[ -n $prev ]]; then check "$prev"; fi
  mkdir -p api
  if [[ -f api/$ver.apidiff ]] && [[ -z $(apidiff "api/$ver.apidiff" | grep '^- ' || true) ]]; then
    echo "api: api/$ver.apidiff unchanged (the API equals it)"
    exit 0
  fi
  go run "$APIDIFF" -m -w "api/$ver.apidiff" "$module" 2>&1 | grep -v '^Ignoring internal package' >&2 || true
  [[ -s api/$ver.apidiff ]] || die "apidiff wrote no api/$ver.apidiff"
  echo "api: wrote api/$ver.apidiff; commit it"
  ;;
same)
  ver=${2:?}
  [[ -f api/$ver.apidiff ]] || die "no api/$ver.apidiff: run make api-snapshot VERSION=$ver and commit it"
  diff=$(apidiff "api/$ver.apidiff" | grep '^- ' || true)
  [[ -z $diff ]] || { echo "$diff" >&2; die "the API differs from api/$ver.apidiff (above): run make api-snapshot VERSION=$ver and commit it"; }
  ;;
*)
  die "usage: scripts/api.sh check | snapshot [vX.Y.Z] | same vX.Y.Z"
  ;;
esac
