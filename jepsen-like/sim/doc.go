// Package sim is a deterministic simulation backend for the jepsen-like
// workload: the catalog's modes and scenarios (jepsen-like/catalog, the
// list the real-process matrix reads too) run against in-process Redis
// nodes on an in-memory network, in virtual time, and their histories go
// through jepsen-like/checker and catalog.Judge unchanged. The scenarios'
// abstract fault plans run as they are; a scenario the simulation cannot
// run says why in its catalog entry. The package imports neither chaos
// nor testcontainers (TestNoHarnessDependency).
//
// # What is simulated
//
//   - Nodes (Node) are miniredis servers (github.com/alicebob/miniredis/v2)
//     that run the project's own Lua scripts with gopher-lua. Every command
//     passes a hook that sets the node's clock (each node has its own: rate
//     and forward jumps), holds commands while the node is paused (they run
//     in order on resume, as after SIGCONT), refuses clients' writes on a
//     replica, logs a master's writes for its replica and answers WAIT.
//     Crash drops every connection and refuses dials until Restart; with
//     persistence the data survives (AOF, appendfsync always), without it
//     the node comes back empty.
//   - A Group is a master + replica with asynchronous replication (a log
//     applied Lag later, in order; a script's effects, not the script, with
//     its expiries as the master set them, as Redis 7 does). Cut stops it, Failover promotes the
//     replica with what it has applied (split brain: clients that kept the
//     old master's address still reach it), Rejoin resynchronises the old
//     master as the new replica.
//   - The network (Net) connects go-redis clients (a custom Dialer) to
//     nodes through in-memory connections built on channels and timers.
//     Per client↔node link: delay and jitter (replies of different
//     connections overtake each other; one connection stays in order),
//     dropped requests, dropped replies, or both (a partition). A dropped
//     message breaks its connection for good, as a hole in a TCP stream
//     would; the client times out and redials.
//   - Time: every run executes inside a testing/synctest bubble, so every
//     timer, deadline, sleep and time.Now of the lock, go-redis, the
//     workload and the nodes is virtual: a 1 s TTL costs no wall time, and
//     goroutines blocked on the in-memory network are durably blocked.
//
// # Scripts: the pooled Lua runner
//
// miniredis builds a new Lua interpreter for every EVAL and EVALSHA, which
// was half the simulation's CPU. A node instead runs EVAL and EVALSHA on
// one interpreter per server with each script compiled once (lua.go), as
// Redis keeps one interpreter for its life: the hook takes the server's
// lock for the whole script and sends each redis.call through the server
// with a connection context miniredis itself made for a script's commands
// (so they neither lock again nor pass the hook's clock and faults: the
// node's clock stands still during a script). Redis's conventions hold:
// KEYS and ARGV, reply conversions both ways, redis.call raising and
// redis.pcall returning {err=...}, error_reply, status_reply, sha1hex; the
// libraries base, table, string and math; a script cannot create or
// change a global or a library (the interpreter is shared; miniredis's
// runner lets a script change its throwaway globals). It differs from miniredis's
// runner only in the words of script errors: Redis 7's ("ERR
// user_script:1: ... script: <sha>, on @user_script:1.", a command's own
// error code kept when redis.call raises it) where miniredis says "ERR
// Error compiling script (new function): ...". EVALSHA of a SHA the server
// does not know, EVAL_RO, EVALSHA_RO, scripts inside MULTI, a bad key
// count and scripts that do not compile go to miniredis, which answers
// them as before (NOSCRIPT after a restart without persistence).
// TestLuaRunnerScripts and TestLuaRunnerEdgeCases compare the two runners.
//
// SIM_LUA=miniredis in the environment keeps miniredis's own runner (for
// comparison: BenchmarkScript measures both).
//
// # Seeds, replay, shrinking
//
// A CellRun is a mode, a scenario and a seed. The seed fixes the fault list
// (the catalog scenario's Faults), the network's jitter, the workload's
// work and think times, and each lock client's id and retry jitter
// (internal/seeded; its label is its worker's name, not host:pid).
// A failing run prints its seed and the command that replays it
// (ReplayCommand), and Shrink drops faults while the run still fails.
//
// Every run has a trace hash (CellResult.Trace, TraceHash): every message a
// link delivers, every client command a node runs, every dial the network
// refuses (go-redis retries it later: nothing else would show it), and
// the history (each lock call's return, each fault edge), with virtual
// timestamps. The events
// of one virtual instant are hashed as a set, since goroutines woken at one
// instant run in an order the Go scheduler picks; what they do to each
// other shows in the replies and in later instants. SIM_TRACE=FILE writes
// the events as text, to diff two runs. The printed replay carries the
// hash (-sim.want-trace) and fails when the replay's differs.
//
// What keeps a seed's run the same: a message's jitter is a hash of the
// seed, its link, its bytes and how many times these bytes went on that
// link (not a draw from one generator in sending order, which goroutines
// racing at one instant would reorder), a pipeline's commands counting as
// a set (a batch of calls made at one instant lists them in the
// scheduler's order; the trace counts them so too); a crash closes its
// node's connections in the order they were made, not in map order; and
// TestCell, the entry point of
// `quorumlock-lab chaos --sim` and of the mutants runner, runs on one processor
// (GOMAXPROCS 1), so that goroutines woken at one instant run one at a
// time in the order the runtime queued them. A reconnected go-redis
// PubSub resubscribes with its channels in map order; the network sorts
// the channels of such a subscribe before the node sees them (and before
// its jitter is drawn). The network's events of one instant run one at
// a time, each after the one before has settled (synctest.Wait), not
// together in the order the runtime's timers pick (instants.go): first
// the commands a resumed node held, in the order they arrived; then each
// connection end's due messages, by connection; then the clients' reads
// whose deadline has come (a fan-out's node calls share their attempt's
// deadline), by connection. A wait that ends at the instant
// of its context's deadline (a lock waiter's retry timer, a worker's
// think time, a fault's wait) counts the deadline as come whichever timer
// ran first (internal/ctxend), so no select picks between the two at
// random. Simulated clients have a fixed pool size (not ten per
// processor) and no second pool for pipelines (ClientOptions).
//
// What is left is Go's runtime (a select among several ready cases
// elsewhere picks at random, maps iterate in a random order, a goroutine
// that runs 10 ms of wall time is preempted and queued behind the others
// of its instant, which on a loaded machine happens to any goroutine
// whose thread the OS sets aside; the runtime's random seed is not ours
// to set): a run that meets one where the order matters can diverge from
// there. TestReplaySameTrace runs every quick cell twice, each in its own
// process, and fails when fewer replay with the same hash than
// testdata/replay-floor says; with SIM_REPLAY_DIFF=1 it logs the first
// instant at which a cell's two traces differ.
// TestReplayReproducesFailure runs a failing cell's printed replay.
// `chaos --mutants --sim` runs every seed of a cell and reports its kill
// rate, and with --repeat N (make mutants-stable) judges a mutant N times
// and says whether every run gave the same verdict. In-process runs (the
// package's other tests) keep every processor, and replay less often.
//
// # What miniredis lacks, and how the simulation avoids it
//
//   - WAIT always answers 0 in miniredis: the node hook answers it from the
//     group's replication log instead.
//   - No Redis Functions: the pooled runner answers FUNCTION LOAD [REPLACE],
//     LIST, DELETE and FLUSH, FCALL and FCALL_RO, also inside MULTI
//     (functions.go), keeping a server's libraries with its scripts (lost
//     by a restart without persistence), so the lock's Functions mode runs
//     (mode redlock-3+functions); TestDifferential checks it against
//     redis-server too. With SIM_LUA=miniredis they are unknown commands.
//   - No replication at all: Group logs writes in the hook and replays them
//     on the replica (the scripts themselves, as Redis before effects
//     replication did, not their effects).
//   - TTLs are durations counted down, not absolute deadlines, so a
//     backward clock jump cannot lengthen them (Redis would): Jump ignores
//     negative jumps. Keys expire lazily, when a command touches the
//     database, which is when Redis's lazy expiry acts too (the active
//     expiry cycle is not modelled; nothing in the lock depends on it).
//   - INFO has no server section and CONFIG GET knows no persistence
//     settings in miniredis: the node hook answers INFO server (a run id
//     and an uptime, both new after every restart) and CONFIG GET
//     appendonly/appendfsync ("yes"/"always" in a scenario whose nodes
//     persist, "no" otherwise), so restart detection runs in simulated
//     crash-restart cells with its default delay.
//   - Links are never instant: every link has a base delay (0.1–0.8 ms
//     each way) and a jitter drawn from the seed (Net), under the latency
//     faults; only go-redis's connection handshake is instant.
//   - The RedLock invariant is judged at every step from the nodes' own
//     keys and expiries (invariant.go).
//   - Pub/sub is at most once: a link can drop a node's pub/sub messages
//     without breaking the connection, or delay them (the catalog's
//     unlock-loss fault, scenario lost-wakeups).
//   - Commands that scripts run pass the same hook: it recognises them
//     (miniredis marks their connection context "nested") and lets them
//     through.
//   - Scripts survive a restart with persistence (the same miniredis
//     keeps its script cache), where Redis would forget them; without
//     persistence the node forgets them, as Redis does.
//   - go-redis's maintenance notifications resolve the address in DNS,
//     which would leave the bubble: ClientOptions turns them off.
//
// Everything the node package does (acquire, reentrancy, idempotent
// retry, owner-checked release and extend, fencing counters, read-write
// locks, the fair queue) gives the same answers on a simulated node as on
// redis-server: TestDifferential checks it.
package sim
