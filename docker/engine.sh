# Sourced by scripts/test.sh (bash): gives the Docker tests an engine,
# `docker compose` and the images, without a registry, and takes down what
# it started.
#
#   docker_up     use the engine that answers (DOCKER_HOST or the default
#                 socket); else, as root, start a private dockerd for this
#                 run; then make sure `docker compose` exists and build the
#                 local images (docker/build-images.sh). Never fails: where
#                 no engine can run it says why, and the Docker tests skip
#                 (or fail, under QUORUMLOCK_REQUIRE_DOCKER=1).
#   docker_down   remove this run's containers and compose project, stop the
#                 dockerd docker_up started (by its PID), remove its files.
#
# A private dockerd has its own socket, data and exec roots, bridge and
# address pool, chosen by a slot lock, so runs on one machine (CI runs three
# at once) never share or stop each other's engine. It publishes container
# ports on 127.0.0.1 only (--ip) and touches no iptables rules; clients
# reach containers through the ports docker-proxy publishes there.
#
# Knobs: QUORUMLOCK_NO_DOCKER=1 skips all of it; QUORUMLOCK_REDIS_IMAGE /
# QUORUMLOCK_TOXIPROXY_IMAGE, when set, are used instead of building.

QUORUMLOCK_COMPOSE_VERSION=${QUORUMLOCK_COMPOSE_VERSION:-v2.40.3}
_docker_dir=""      # this run's private dockerd files
_docker_pid=""      # the dockerd this run started
_docker_bridge=""   # its bridge
_docker_slot_fd=""  # the slot lock
_docker_config=""   # a DOCKER_CONFIG made for the compose plugin

_docker_log() { echo "docker: $*" >&2; }

_docker_answers() { timeout 10 docker version >/dev/null 2>&1; }

# _docker_start_private starts dockerd for this run; returns 1 with the
# reason printed when it cannot.
_docker_start_private() {
  if [[ $(id -u) != 0 ]]; then
    _docker_log "no engine answers, and starting dockerd needs root"
    return 1
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    _docker_log "no engine answers and dockerd is not installed (Debian: apt-get install docker.io)"
    return 1
  fi
  local slot
  for slot in $(seq 0 15); do
    exec {_docker_slot_fd}>"/tmp/quorumlock-dockerd-slot-$slot.lock"
    if flock -n "$_docker_slot_fd"; then break; fi
    exec {_docker_slot_fd}>&-
    _docker_slot_fd=""
  done
  if [[ -z $_docker_slot_fd ]]; then
    _docker_log "all 16 private dockerd slots are taken"
    return 1
  fi
  _docker_dir=/var/lib/quorumlock-docker/slot$slot
  _docker_bridge=qlk$slot
  # A previous run killed hard may have left these behind; the slot lock
  # says nobody uses them now, so its dockerd (found by its pidfile in the
  # slot's own directory) is an orphan.
  local orphan
  orphan=$(cat "$_docker_dir/docker.pid" 2>/dev/null || true)
  if [[ -n $orphan ]] && [[ $(cat "/proc/$orphan/comm" 2>/dev/null) == dockerd ]]; then
    _docker_log "stopping dockerd $orphan left in slot $slot by a run that died"
    kill -TERM "$orphan" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$orphan" 2>/dev/null || break; sleep 0.2; done
  fi
  umount -R "$_docker_dir/exec" >/dev/null 2>&1 || true
  ip link del "$_docker_bridge" >/dev/null 2>&1 || true
  rm -rf "$_docker_dir"
  mkdir -p "$_docker_dir"
  ip link add "$_docker_bridge" type bridge &&
    ip addr add "10.213.$slot.1/24" dev "$_docker_bridge" &&
    ip link set "$_docker_bridge" up || {
    _docker_log "cannot create bridge $_docker_bridge (no CAP_NET_ADMIN?)"
    return 1
  }
  dockerd \
    --host "unix://$_docker_dir/docker.sock" \
    --data-root "$_docker_dir/root" \
    --exec-root "$_docker_dir/exec" \
    --pidfile "$_docker_dir/docker.pid" \
    --bridge "$_docker_bridge" \
    --default-address-pool "base=10.$((214 + slot)).0.0/16,size=24" \
    --ip 127.0.0.1 --iptables=false --ip6tables=false --ip-masq=false \
    >"$_docker_dir/dockerd.log" 2>&1 &
  _docker_pid=$!
  export DOCKER_HOST="unix://$_docker_dir/docker.sock"
  local i
  for i in $(seq 150); do
    if _docker_answers; then
      _docker_log "started dockerd (pid $_docker_pid, $DOCKER_HOST) in $((i / 5)) s"
      return 0
    fi
    if ! kill -0 "$_docker_pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  _docker_log "dockerd did not come up; its log ends:"
  tail -n 15 "$_docker_dir/dockerd.log" >&2 || true
  docker_down
  unset DOCKER_HOST
  return 1
}

# _docker_compose makes `docker compose` work: the installed plugin, or
# Compose v2 built from its Go module (cached per version) as a CLI plugin
# in a private DOCKER_CONFIG.
_docker_compose() {
  if timeout 10 docker compose version >/dev/null 2>&1; then return 0; fi
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/quorumlock/compose-$QUORUMLOCK_COMPOSE_VERSION
  if [[ ! -x $cache/docker-compose ]]; then
    _docker_log "building docker compose $QUORUMLOCK_COMPOSE_VERSION from its Go module (once per machine)"
    local src tmp
    src=$(GOWORK=off go mod download -json "github.com/docker/compose/v2@$QUORUMLOCK_COMPOSE_VERSION" |
      sed -n 's/.*"Dir": "\(.*\)".*/\1/p') || return 1
    tmp=$(mktemp -d)
    # `go install …@version` refuses a go.mod with exclude directives, so
    # build inside a copy of the module.
    cp -r "$src/." "$tmp" && chmod -R u+w "$tmp" &&
      (cd "$tmp" && GOWORK=off CGO_ENABLED=0 go build -trimpath \
        -ldflags "-X github.com/docker/compose/v2/internal.Version=$QUORUMLOCK_COMPOSE_VERSION" \
        -o docker-compose ./cmd) &&
      mkdir -p "$cache" && mv "$tmp/docker-compose" "$cache/docker-compose"
    local rc=$?
    rm -rf "$tmp"
    if ((rc != 0)); then
      _docker_log "building docker compose failed"
      return 1
    fi
  fi
  _docker_config=$(mktemp -d)
  mkdir -p "$_docker_config/cli-plugins"
  ln -s "$cache/docker-compose" "$_docker_config/cli-plugins/docker-compose"
  export DOCKER_CONFIG=$_docker_config
}

docker_up() {
  if [[ -n ${QUORUMLOCK_NO_DOCKER:-} ]]; then
    _docker_log "QUORUMLOCK_NO_DOCKER is set: Docker tests skip"
    return 0
  fi
  local start=$SECONDS
  if ! command -v docker >/dev/null 2>&1; then
    _docker_log "no docker client on PATH (Debian: apt-get install docker.io): Docker tests skip"
    return 0
  fi
  if _docker_answers; then
    _docker_log "using the engine at ${DOCKER_HOST:-the default socket}"
  elif ! _docker_start_private; then
    _docker_log "no engine: Docker tests skip"
    return 0
  fi
  export QUORUMLOCK_DOCKER_RUN=${QUORUMLOCK_DOCKER_RUN:-$$-$RANDOM}
  # testcontainers' reaper is an image from a registry; the tests remove
  # their containers themselves, and docker_down removes leftovers.
  export TESTCONTAINERS_RYUK_DISABLED=true
  _docker_compose || _docker_log "no docker compose: the compose tests skip"
  if [[ -z ${QUORUMLOCK_REDIS_IMAGE:-} || -z ${QUORUMLOCK_TOXIPROXY_IMAGE:-} ]]; then
    local vars
    if vars=$("$(dirname "${BASH_SOURCE[0]}")/build-images.sh"); then
      eval "$vars"
    else
      _docker_log "building the local images failed"
    fi
  fi
  _docker_log "ready in $((SECONDS - start)) s: redis ${QUORUMLOCK_REDIS_IMAGE:-?}, toxiproxy ${QUORUMLOCK_TOXIPROXY_IMAGE:-?}, run $QUORUMLOCK_DOCKER_RUN"
}

docker_down() {
  if [[ -n ${QUORUMLOCK_DOCKER_RUN:-} ]] && _docker_answers; then
    local ids
    ids=$(docker ps -aq --filter "label=org.quorumlock.run=$QUORUMLOCK_DOCKER_RUN" 2>/dev/null
      docker ps -aq --filter "label=com.docker.compose.project=quorumlock-$QUORUMLOCK_DOCKER_RUN" 2>/dev/null)
    if [[ -n $ids ]]; then
      _docker_log "removing containers left by this run: $(echo $ids)"
      docker rm -f $ids >/dev/null 2>&1 || true
    fi
    docker network ls -q --filter "label=com.docker.compose.project=quorumlock-$QUORUMLOCK_DOCKER_RUN" 2>/dev/null |
      xargs -r docker network rm >/dev/null 2>&1 || true
  fi
  if [[ -n $_docker_pid ]]; then
    kill -TERM "$_docker_pid" 2>/dev/null || true
    local i
    for i in $(seq 100); do
      kill -0 "$_docker_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$_docker_pid" 2>/dev/null || true
    wait "$_docker_pid" 2>/dev/null || true
    _docker_log "stopped dockerd (pid $_docker_pid)"
    _docker_pid=""
  fi
  if [[ -n $_docker_bridge ]]; then
    ip link del "$_docker_bridge" >/dev/null 2>&1 || true
    _docker_bridge=""
  fi
  if [[ -n $_docker_dir ]]; then
    # The exec root holds mounts of the (stopped) containers' netns.
    umount -R "$_docker_dir/exec" >/dev/null 2>&1 || true
    rm -rf "$_docker_dir" 2>/dev/null || true
    _docker_dir=""
  fi
  if [[ -n $_docker_config ]]; then
    rm -rf "$_docker_config"
    _docker_config=""
  fi
  if [[ -n $_docker_slot_fd ]]; then
    exec {_docker_slot_fd}>&-
    _docker_slot_fd=""
  fi
}
