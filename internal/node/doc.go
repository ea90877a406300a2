// Package node is one Redis deployment taking part in a lock: a standalone
// server, a Sentinel-managed master+replica group (redis.NewFailoverClient)
// or a Redis Cluster (redis.NewClusterClient), behind the caller's go-redis
// client (redis.UniversalClient). Package quorum drives several of them;
// this package knows nothing of quorums.
//
// # Data model
//
// A lock called name lives in three Redis names that share the hash tag
// {name}, so a Cluster keeps them in one slot (Keys):
//
//	quorumlock:{name}         held by one acquisition: the string FastValue
//	                          (the attempt id "owner.n", or "owner\0attempt");
//	                          else a hash: owner → hold count, plus one share
//	                          per acquisition attempt; expires with PX
//	quorumlock:{name}:fence   fencing counter (set-if-greater)
//	quorumlock:{name}:unlock  pub/sub channel told when the lock becomes free
//
// Every script reads the string as the hash it stands for (lock_lib.lua)
// and turns it into one only when a second share needs it (reentrancy).
// Besides, quorumlock:client:<id> holds a client's label for operators
// (SetLabel), once per client, not per lock.
//
// Every change is one Lua script (embedded .lua files, run by EVALSHA with
// a fallback to EVAL): acquire (reentrant for the same owner), extend (only
// where this attempt holds a share; never acquires), release (publishes on
// the channel when the lock becomes free), fence, and force-release for
// operators. Shares are counted per attempt, so a retried call after a lost
// reply is harmless and a late message of one attempt never touches
// another's share. With WithFunctions the same scripts run as one Redis
// function library (FCALL), for servers that forbid EVAL (functions.go).
//
// # Calls and deadlines
//
// A frozen node must not stall a quorum, so every call honours its
// context's deadline. go-redis does so only with ContextTimeoutEnabled; when
// a client lacks it, calls are wrapped so the caller still returns at the
// deadline. Options returns the recommended settings: ContextTimeoutEnabled,
// MaxRetries -1 (the lock retries at its own level), one dial attempt.
//
// # Waiting
//
// WatchAs and WatchWaiter register interest in a lock's unlock messages. Waiters on one node
// share one pub/sub connection; a message wakes the longest-waiting watch
// (or every watch made with wakeAll). PUBLISH reaches subscribers on every
// node of a Cluster; a FailoverClient subscribes on the current master.
// Messages sent while a connection is down are lost, so waiters also retry
// on their own schedule (package quorum does).
//
// # Node identity
//
// A node is named after its client (address; "cluster[addrs]" for a
// Cluster; "sentinel(…)" for a FailoverClient, whose options do not say
// which group it watches). quorum.New uses the names to reject one
// deployment given twice.
//
// # Files
//
// node.go is the Node and its calls; lock.go one attempt's handle (the
// lock the multilock core drives), with rw.go and fair.go its read-write
// and fair forms and checked.go the safety checks asked in the same round
// trip; scripts.go the embedded Lua; watch.go the unlock channel; force.go
// the operator's force-release; inspect.go reading locks back; probe.go
// TIME and INFO.
package node
