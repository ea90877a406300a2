#!/usr/bin/env bash
# Builds the images the Docker tests and docker-compose.yml need without an
# image registry:
#   redis      FROM scratch + this machine's /usr/bin/redis-server (Debian),
#              the libraries ldd lists, dash as /bin/sh
#   toxiproxy  FROM scratch + toxiproxy-server built from the Go module that
#              chaos/go.mod requires
# Needs a Docker engine (DOCKER_HOST is honoured), redis-server and Go.
# Prints the variables to use them, for eval:
#   eval "$(docker/build-images.sh)"
# Tags (override with the same variables): QUORUMLOCK_REDIS_IMAGE defaults
# to quorumlock-local/redis:<version>, QUORUMLOCK_TOXIPROXY_IMAGE to
# quorumlock-local/toxiproxy:<version>. Users who can pull do not need this:
# the defaults everywhere else are the official images.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
redis_server=$(command -v redis-server)
redis_version=$("$redis_server" --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
tp_version=$(cd "$root/chaos" && go list -m -f '{{.Version}}' github.com/Shopify/toxiproxy/v2)
redis_image=${QUORUMLOCK_REDIS_IMAGE:-quorumlock-local/redis:${redis_version}}
toxiproxy_image=${QUORUMLOCK_TOXIPROXY_IMAGE:-quorumlock-local/toxiproxy:${tp_version#v}}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

# Redis: the binary, its libraries and the loader at the paths ldd gives.
rootfs=$ctx/redis/rootfs
mkdir -p "$rootfs"/{usr/local/bin,bin,data,tmp}
chmod 1777 "$rootfs/tmp"
cp "$redis_server" "$rootfs/usr/local/bin/redis-server"
ln -s redis-server "$rootfs/usr/local/bin/redis-sentinel"
cp "$(readlink -f /bin/sh)" "$rootfs/bin/sh"
cp "$root/docker/entrypoint.sh" "$rootfs/usr/local/bin/docker-entrypoint.sh"
for lib in $(ldd "$redis_server" "$(readlink -f /bin/sh)" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
cp "$root/docker/redis.Dockerfile" "$ctx/redis/Dockerfile"

# toxiproxy: a static binary of the module version chaos uses.
mkdir -p "$ctx/toxiproxy"
(cd "$root/chaos" && CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/Shopify/toxiproxy/v2.Version=${tp_version#v}" -o "$ctx/toxiproxy/toxiproxy" github.com/Shopify/toxiproxy/v2/cmd/server)
cp "$root/docker/toxiproxy.Dockerfile" "$ctx/toxiproxy/Dockerfile"

# The classic builder needs no buildx plugin and no registry for FROM scratch.
export DOCKER_BUILDKIT=0
for spec in "$redis_image redis" "$toxiproxy_image toxiproxy"; do
  read -r tag dir <<<"$spec"
  if ! out=$(docker build -q -t "$tag" "$ctx/$dir" 2>&1); then
    echo "$out" >&2
    exit 1
  fi
done
echo "export QUORUMLOCK_REDIS_IMAGE=$redis_image"
echo "export QUORUMLOCK_TOXIPROXY_IMAGE=$toxiproxy_image"
