// Package localredis starts and stops real redis-server processes on free
// loopback ports. Tests, the demo, the benchmarks and the chaos harness all use
// this one launcher, so every place that needs a local Redis behaves the same:
// a fresh data directory, an explicit persistence setting, the process
// stopped by PID when the owner is done (t.Cleanup in tests, even on failure).
//
// Start, StartN and StartT (with StartNT for several) start standalone
// servers with a Config (persistence: none, AOF everysec, AOF always;
// replicaof; extra directives; extra environment, e.g. LD_PRELOAD for clock
// faults). A Server can be paused (SIGSTOP), resumed, killed (SIGKILL, data
// kept), shut down, restarted on the same port and directory, and wiped
// (power loss).
//
// Topologies for the library's node kinds:
//
//   - StartCluster starts a Redis Cluster of masters (cluster-enabled, a
//     bus port of its own) joined by redis-cli --cluster create, and waits
//     for cluster_state:ok; MoveSlot reshards one slot with its keys.
//   - StartSentinel starts master+replica groups watched by redis-sentinel
//     processes with short down-after and failover timeouts; Master and
//     WaitFailover follow failovers.
//
// Tests skip when redis-server (or redis-cli, redis-sentinel) is missing,
// and fail instead when Required() (CI sets QUORUMLOCK_REQUIRE_REDIS).
// ClientOptions gives go-redis options with the settings a lock needs.
package localredis
