// Package quorum is the lock API: mutexes on a quorum of independent Redis
// deployments (the RedLock algorithm), with leases that renew themselves,
// report their loss, and carry fencing tokens.
//
// # Nodes
//
// New takes one go-redis client per independent Redis deployment; Dial and
// FromEnv build them from URLs (redis://, rediss://, with user, password
// and DB). A node may be a standalone server (redis.NewClient), a
// Sentinel-managed master+replica group (redis.NewFailoverClient) or a
// Redis Cluster (redis.NewClusterClient): the keys of one lock share a
// hash slot. Give 3 or 5 nodes that fail independently; one node is a
// single-instance lock (see docs/choosing.md).
//
// # Locking
//
//	client, err := quorum.New(nodes)               // or quorum.Dial("redis://a:6379,redis://b:6379,redis://c:6379")
//	m, err := client.Mutex("invoice/42")
//	lease, err := m.Lock(ctx)                      // waits; TryLock tries once
//	defer lease.Unlock(ctx)
//	doWork(lease.Context())                        // cancelled if the lease is lost
//
// An acquisition asks every node at once and needs the policy's quorum
// (Majority by default) within the validity left after subtracting the time
// it took and a clock drift allowance. Lock waits on the nodes' unlock
// messages (pub/sub) instead of polling; only a real unlock sends one (a
// failed attempt gives back its nodes silently), and after an attempt that
// got some nodes but not a quorum it retries after a random delay that
// doubles while that repeats, so a holder that keeps a bare majority is not
// probed more than a few times a second.
//
// # Errors
//
// A failed Lock, TryLock, Extend or Unlock returns an *Error whose text is
// one line, summary first:
//
//	quorumlock: lock "orders/42" not obtained: held by another owner on 2 of 3 nodes, 1 not waited for
//
// Test it with errors.Is: ErrNotObtained (ErrNotHeld for Extend and
// Unlock), ErrTaken when a node refused because another owner holds the
// lock (contention, not an outage), ErrClosed, and the context's error
// when a cancelled wait ended it. The nodes' errors stay reachable:
// errors.As with a *NodeError gives the most telling one (a refused
// connection or a permission before a refusal, before a call cut off by
// its deadline), Error.Nodes lists them all, and fmt's %+v prints one per
// line. A node that had not answered when the outcome was already known is
// not an error; it is counted in Error.Undecided.
//
// # Failing fast, and go-redis's logger
//
// New does not fail when nodes are down: a client may start before its
// nodes, and each Lock reports the nodes it could not reach. Where a
// missing quorum at start is a configuration error, WithDialCheck(timeout)
// makes Dial, New and FromEnv ping every node and fail with ErrUnreachable
// when fewer than a quorum answer.
//
// go-redis logs through one process-global logger, to stderr: a line per
// failed dial, until as many dials as its pool holds failed in a row (a few
// dozen lines per dead node, again after each recovery). Route it to slog
// (see observe.RedisLogger), or discard it, once at start:
//
//	redis.SetLogger(observe.RedisLogger{Logger: slog.Default(), Level: slog.LevelDebug})
//	redis.SetLogger(observe.RedisLogger{}) // discard
//
// # Leases
//
// A lease without a fixed lease time is renewed by a watchdog every TTL/3.
// When a quorum cannot be renewed before the validity ends, or says the
// lock is no longer held (after a failover lost the key, or a force
// unlock), the lease ends with ErrLeaseLost: Done is closed and Context is
// cancelled, so the critical section can stop. WithLeaseTime gives a fixed
// lease that ends with ErrLeaseExpired unless extended. Client.Close ends
// every lease the client still holds (Err wraps ErrClosed), stops its
// watchdog and releases its lock.
//
// A lock and its leases are safe against a holder that keeps running after
// its lease ended only if the protected resource checks fencing tokens:
// every lease carries a Token that strictly increases across holders (hand
// it to package guard, or check it in your store).
//
// # Defaults
//
// The protections are on unless turned off (docs/defaults.md has each
// one's measured cost):
//   - fencing tokens: default on; WithFencing(false) saves a round trip.
//     Counters expire after WithFenceRetention (7 days) without use and
//     restart from the node's clock in microseconds, so tokens still
//     increase (unless a node's clock goes back by more than that).
//   - restart detection: default on for each node that lacks appendonly
//     yes with appendfsync always (asked once with CONFIG GET): such a node
//     does not vote while it is younger than the largest TTL in use or
//     after its run_id changed. WithRestartDetection(true) forces it on every
//     node; WithRestartDetection(false) turns it off.
//   - nothing left behind: Close removes the client's label from every
//     node; lock keys carry their TTL.
//   - batching of concurrent calls: default on (WithBatching).
//   - off by default: WithReplicaAck, WithPreflight, WithObserver and
//     WithLogger.
//
// # More
//
// WithOwner makes acquisitions reentrant for an explicit owner. MutexAll
// holds several resources at once or none. RWMutex admits many readers or
// one writer; FairMutex serves waiters in arrival order. The policy
// (WithPolicy, a multilock.Policy) decides how many nodes may fail
// (Majority: RedLock; All: MultiLock) and how long each node call may
// take. Do runs a function under the lock. The
// operator's tools (preflight Check, Inspect, List, ForceUnlock) are in
// package quorum/admin, reached through Client.Admin.
//
// # Observability
//
// WithObserver receives every operation's outcome (attempts with per-node
// votes, waits, renewals, releases with hold times, lost leases) as the
// events of package quorum/observe; package otelquorum turns them into OpenTelemetry metrics and spans. WithLogger
// logs them through log/slog. Both are off by default and cost nothing then.
//
// # Client settings
//
// Give go-redis clients ContextTimeoutEnabled: true (deadlines are what
// keep a frozen node from stalling the quorum), MaxRetries: -1 (the lock
// retries at its own level), DialerRetries: 1 and DialerRetryTimeout: 1µs
// (no pause after the one dial); Dial and node.Options do. See
// docs/operations.md for persistence, restarts, clocks and sizing.
package quorum
