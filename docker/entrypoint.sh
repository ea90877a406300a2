#!/bin/sh
# Entry point of the locally built Redis image (docker/build-images.sh).
# Behaves like the official image's for the cases quorumlock uses:
#   no arguments          → redis-server
#   first argument "-…"   → redis-server with those arguments
#                           (testcontainers passes bare options)
#   anything else         → run it ("redis-server …", "redis-sentinel …",
#                           "sh -c …" as docker-compose.yml does)
# Like the official image, redis-server starts with protected mode off (its
# clients come through the bridge network, not loopback); a later
# --protected-mode argument still wins.
if [ $# -eq 0 ]; then
	set -- redis-server
fi
case "$1" in
-*) set -- redis-server "$@" ;;
esac
if [ "$1" = redis-server ]; then
	shift
	set -- redis-server --protected-mode no "$@"
fi
exec "$@"
