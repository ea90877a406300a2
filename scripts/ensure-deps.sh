#!/usr/bin/env bash
# Finds or installs what the tests and the demo need: redis-server,
# redis-sentinel and redis-cli (Debian: redis-server, redis-sentinel,
# redis-tools), libfaketime and gcc for the clock-fault tests, and chromium
# for the web console's browser test (console/browsertest/, driven with chromedp), and
# postgresql for the SQL fencing guard's test (guard/: the test runs initdb
# and postgres itself, as a non-root user, on a free loopback port).
# Installs with apt-get when running as root; otherwise says what to install.
set -euo pipefail

need_pkgs=()
command -v redis-server   >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need_pkgs+=(redis-sentinel)
command -v redis-cli      >/dev/null 2>&1 || need_pkgs+=(redis-tools)
command -v gcc            >/dev/null 2>&1 || need_pkgs+=(gcc)
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need_pkgs+=(libfaketime)
# `ensure-deps.sh redis` (make demo) stops here: the demo needs Redis only.
if [[ ${1:-all} != redis ]]; then
  command -v chromium       >/dev/null 2>&1 || need_pkgs+=(chromium)
  { command -v initdb || ls /usr/lib/postgresql/*/bin/initdb; } >/dev/null 2>&1 || need_pkgs+=(postgresql)
fi
for extra in ${QUORUMLOCK_EXTRA_PKGS:-}; do
  dpkg -s "$extra" >/dev/null 2>&1 || need_pkgs+=("$extra")
done

# Docker is optional (the Docker backend's and docker-compose.yml's tests
# skip without an engine): installed as root where apt can, never required.
if [[ ${1:-all} != redis && -z ${QUORUMLOCK_NO_DOCKER:-} && $(id -u) == 0 ]] &&
  ! command -v dockerd >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "installing (optional, for the Docker tests): docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq --no-install-recommends docker.io ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io; }; } >/dev/null 2>&1 ||
    echo "docker.io could not be installed: the Docker tests will skip" >&2
fi

if ((${#need_pkgs[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "installing: ${need_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  # The Debian packages start services where an init system runs; the tests
  # start their own servers on free ports and never use them.
  exit 0
fi
echo "quorumlock needs these Debian packages: ${need_pkgs[*]}" >&2
echo "install them with: sudo apt-get install ${need_pkgs[*]}" >&2
echo "(or put a redis-server binary on PATH / set QUORUMLOCK_REDIS_SERVER)" >&2
exit 1
