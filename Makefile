# Two commands on a fresh machine:
#   make demo   start local Redis nodes, run contending workers through the quorum lock, print what happened
#   make test   every test, with the race detector, against real redis-server processes
.PHONY: demo test test-alone test-functions test-versions api-check api-snapshot release deps deps-redis docker-images bench bench-quick chaos chaos-quick chaos-seeds mutants mutants-quick mutants-ci mutants-kinds vet sim sim-quick sim-soak-ci sim-mutants mutants-stable

deps:
	@scripts/ensure-deps.sh

deps-redis:
	@scripts/ensure-deps.sh redis

# The library's module alone (GOWORK=off): the demo needs nothing of the
# harness, so a fresh machine downloads only go-redis and x/sync.
demo: deps-redis
	GOWORK=off go run ./cmd/quorumlock demo

test: deps
	scripts/test.sh

# The library alone (GOWORK=off, no -race) at the oldest go-redis its
# go.mod accepts: the last part of make test, on its own (about 2.5 min).
test-alone: deps-redis
	scripts/test-alone.sh

# The lock's tests with every client in Redis Functions mode (FCALL instead
# of EVALSHA; quorum.WithFunctions), without -race: about 2.5 min.
test-functions: deps-redis
	QUORUMLOCK_TEST_FUNCTIONS=1 GOWORK=off go test -count=1 ./internal/node/ ./quorum/...

# The library's tests on the newest Go toolchain (go1.27.3, from the module
# proxy) with the newest go-redis v9 (in a copy of go.mod), without -race;
# scripts/test-versions.sh toolchain|go-redis runs one edge alone.
test-versions: deps-redis
	scripts/test-versions.sh

# The exported API of the library against the last release's committed
# baseline (api/vX.Y.Z.apidiff): an incompatible change fails unless
# CHANGELOG.md lists it under the next major version.
api-check:
	@scripts/api.sh check

# Regenerate the baseline: VERSION defaults to CHANGELOG.md's newest release.
api-snapshot:
	@scripts/api.sh snapshot $(VERSION)

# Tag a release locally (never pushes): make release VERSION=vX.Y.Z.
release:
	@scripts/release.sh "$(VERSION)"

# The Redis and toxiproxy images of the Docker backend and docker-compose.yml,
# built without a registry; prints the variables that select them
# (eval "$(make -s docker-images)"). make test builds them by itself.
docker-images:
	@docker/build-images.sh

vet:
	gofmt -l . && go vet github.com/quorumlock/quorumlock/...

# Side by side with redsync, redislock and a raw SET NX floor (own module: bench/).
bench: deps-redis
	cd bench && go run . -json ../docs/results/bench.json -curve ../docs/bench-curve.png

bench-quick: deps-redis
	cd bench && go run . -quick -curve bench-curve.png

# The long run (not in CI): contended locking of every lock kind and an
# election on 3 nodes, one node restarted every RESTART; fails when the
# client's memory, goroutines or sockets or the nodes' keys grew. Writes
# soak.png and soak.json in bench/. make soak DUR=30m (at least 4m)
.PHONY: soak
DUR ?= 1h
RESTART ?= 3m
soak: deps-redis
	cd bench && go run ./soak -dur $(DUR) -restart $(RESTART) -plot soak.png -json soak.json

# The single-node vs quorum matrix under faults: the lab
# (jepsen-like/cmd/quorumlock-lab), through the workspace.
chaos: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --json chaos.json --html chaos.html

chaos-quick: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --quick --json chaos.json --html chaos.html

# The expected-unsafe cells of the quick matrix under seeds 1–5: in how
# many of 5 each reproduced its violation. docs/chaos-matrix.md's k-of-n
# table is generated from the JSON (go test ./jepsen-like/matrix -run
# TestDocSeeds -update).
chaos-seeds: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --quick --unsafe-only --seeds 5 --json docs/results/chaos-seeds.json --html chaos-seeds.html

# Deliberate bugs put into a copy of the library, each run through the
# matrix cells meant to catch it (jepsen-like/mutants): exit 1 if one survives.
mutants: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants

mutants-quick: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --mutant unlock-without-owner-check,no-validity-check,watchdog-silent

# The form CI runs (.ci/run): the mutants marked CI in jepsen-like/mutants
# (the core's three killed by dozens of violations, one per lock kind, one
# per safety feature), each in its first cell only. In the simulation all of
# them; on real processes the core's three (--workloads mutex): the lock
# kinds' would add about two minutes to CI, and make mutants-kinds judges
# them there. Two at a time (the cells mostly wait on timers and the
# network; the scratch builds share the build cache through -trimpath).
# The others are killed by a handful or need libfaketime, and stay in
# make mutants.
mutants-ci: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --ci --workloads mutex --parallel 2
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --ci --sim --parallel 2

# One mutant per lock kind (issue 25), each through its kind's workload
# cells, on real processes and in the simulation. Not part of mutants-ci:
# together they would take CI past its 20 minutes.
KIND_MUTANTS = rw-writer-beside-readers,rw-writer-refused-when-free,fair-last-first,fair-dead-waiter-stays,renewal-believes-longer,all-partial-set,reentrant-partial-release-frees,batched-replies-swapped,guard-token-string-compare,guard-refuses-equal-token,restart-votes-at-once,renewal-from-non-owner,election-term-reused,election-term-decreasing,election-loss-untold,election-observe-lags,campaign-polls-slowly
mutants-kinds: deps-redis
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --mutant $(KIND_MUTANTS)
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --sim --mutant $(KIND_MUTANTS)

# The deterministic simulation (jepsen-like/sim): nodes in memory running
# our Lua scripts, an in-memory network and virtual time. sim-quick is the
# CI form (about a minute without -race on an idle 2-core machine): the
# differential test against redis-server and the quick cells. sim adds the
# unsafe-mode reproduction over 100 seeds, the throughput measurement and
# the redlock-5 soak under minority faults (SIM_SOAK acquisitions, default
# 1,000,000, within SIM_SOAK_BUDGET minutes, default 60).
sim-quick: deps-redis
	cd jepsen-like && go test -count=1 ./sim

# CI's form of the soak: redlock-5 under minority faults for one minute of
# wall time (no -race), every run judged; and the replay checks (each quick
# cell twice, same trace hash; a failing cell's printed replay, run three
# times, fails the same way with the same hash), which count only without
# -race.
sim-soak-ci:
	cd jepsen-like && SIM_FULL=1 SIM_SOAK_BUDGET=1 go test -count=1 -v -timeout 10m -run 'TestSoak' ./sim
	cd jepsen-like && go test -count=1 -v -timeout 10m -run 'TestReplaySameTrace|TestReplayReproducesFailure' ./sim

sim: deps-redis
	cd jepsen-like && SIM_FULL=1 go test -count=1 -v -timeout 0 -run 'TestDifferential|TestQuickCells|TestUnsafeReproduction|TestThroughput|TestSoak' ./sim

# Every mutant of jepsen-like/mutants judged in the simulation.
sim-mutants:
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --sim

# Verdicts that do not flicker: each of STABLE_MUTANTS (and the control)
# judged REPEAT times in the simulation from one build, with the same
# seeds; exit 1 when the runs disagree on killed or not. The table says,
# per mutant, in how many runs the kill rate and trace hash were the same.
STABLE_MUTANTS ?= renewal-from-non-owner
REPEAT ?= 10
mutants-stable:
	go run ./jepsen-like/cmd/quorumlock-lab chaos --mutants --sim --mutant $(STABLE_MUTANTS) --repeat $(REPEAT)
