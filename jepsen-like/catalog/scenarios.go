package catalog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/localredis"
)

// Runner is a backend that runs the catalog's cells.
type Runner string

// The runners.
const (
	// Matrix runs real redis-server processes behind toxiproxy
	// (jepsen-like/matrix, through package chaos).
	Matrix Runner = "matrix"
	// Sim runs in-memory nodes on an in-memory network in virtual time
	// (jepsen-like/sim).
	Sim Runner = "sim"
)

// Expectation is what the literature predicts for one mode under one
// scenario: the claim tested, whether the mode is expected safe, and why.
type Expectation struct {
	Claim report.Claim
	Safe  bool
	Why   string
}

// Scenario is a fault pattern, applied to a cell's nodes and clients while
// the workload runs. Faults is its plan in the abstract form every runner
// maps to its own faults (package chaos's for the matrix, in-memory ones
// for the simulation); a runner that cannot run the scenario is named in
// NotOn, with the reason.
type Scenario struct {
	// ID names the scenario on the command line and in reports.
	ID string
	// Summary says what happens, in a sentence.
	Summary string
	// Persistence of the cell's Redis nodes.
	Persistence localredis.Persistence
	// Applies reports whether the scenario means something for the mode
	// (nil: always); cells where it does not are skipped.
	Applies func(Mode) bool
	// Expect gives the claim and the prediction for the mode.
	Expect func(Mode) Expectation
	// LeasesHold: the faults strike clients only, so whatever the claim
	// expects of the clients' data, the lock must never have two valid
	// leases at once; such cells are also judged on lease exclusion (and
	// token order in a fenced mode).
	LeasesHold bool
	// ForgetsFences: nodes restart without persistence, so their fencing
	// counters start again (the design says counters survive restarts only
	// with persistence); a fenced mode's token order is counted, not
	// judged.
	ForgetsFences bool
	// Watchdog: every workload's leases are renewed by the watchdog
	// (the mutex workload's too), so a holder kept longer than the lease
	// keeps it.
	Watchdog bool
	// Pace, if set, adapts the run's timing to the scenario (see Pace).
	Pace *Pace
	// Think, if set, is how long workers pause between a release and
	// their next acquire (the workload's default is a few milliseconds):
	// long enough, and a releaser does not take the lock straight back,
	// so only waiters can take it.
	Think time.Duration
	// Faults is the scenario's fault plan (nil when no runner that reads
	// the abstract plan runs it: see NotOn).
	Faults Plan
	// NotOn names the runners that cannot run the scenario, with why.
	NotOn map[Runner]string
}

// RunsOn reports whether runner r runs s, and if not, why.
func (s Scenario) RunsOn(r Runner) (bool, string) {
	why, no := s.NotOn[r]
	return !no, why
}

// Pace is how a scenario whose every fault event outlasts the lease (a
// pause past the lease, a restart after the max TTL, a holder kept past its
// lease) fits its strikes in a cell: it runs with a shorter lease and for
// longer than the run's timing says.
type Pace struct {
	// LeaseDiv divides the lease (never below MinPacedLease, nor below
	// 4/3 of the attempt timeout: a lease must outlast an attempt).
	LeaseDiv int
	// DurationMul multiplies the cell's duration.
	DurationMul float64
}

// MinPacedLease is the shortest lease a Pace gives.
const MinPacedLease = 250 * time.Millisecond

// Claims tested besides those of package report.
var (
	// ClaimNoFaults: without faults a lock on one instance, or on a
	// majority of instances, is mutually exclusive.
	ClaimNoFaults = report.Claim{Source: report.RedlockSpec,
		Text:     "without faults, SET NX PX with a random value and a compare-and-delete release is a correct lock, on one instance or a majority",
		Property: checker.MutualExclusion}
	// ClaimStalledAcquire: a client stalled after the nodes granted, for
	// longer than the TTL, must not take the lock: its keys may have
	// expired and another client may hold it.
	ClaimStalledAcquire = report.Claim{Source: report.Antirez,
		Text:     "delays while acquiring are caught by the validity check: a client stalled past the TTL between the grants and their use does not take the lock",
		Property: checker.MutualExclusion}
	// ClaimAllNodes: a lock that needs every node survives a node losing
	// its key: the other nodes still refuse a second holder (at the cost
	// of availability).
	ClaimAllNodes = report.Claim{Source: report.RedlockSpec,
		Text:     "a lock that needs every node (MultiLock) cannot be granted twice by one node losing its key: the other nodes still refuse",
		Property: checker.LeaseExclusion}
	// ClaimClockOffset: Redlock assumes no synchronised clocks; a TTL the
	// node counts on its own clock is immune to an offset between the
	// client's wall clock and the node's. A lock that sends an absolute
	// expiry time from the client's clock is not.
	ClaimClockOffset = report.Claim{Source: report.Antirez,
		Text:     "Redlock does not need synchronised clocks: an expiry the node counts from its own clock (PX) is immune to an offset between the clients' and the nodes' wall clocks",
		Property: checker.LeaseExclusion}
	// ClaimLossSignalled: a lease-based lock must tell its holder that the
	// lease is lost before another client can be granted the lock, also
	// when its renewal hangs instead of failing.
	ClaimLossSignalled = report.Claim{Source: report.JepsenEtcd,
		Text:     "a lease can expire while its holder works; the lock must at least tell the holder before another client is granted it, also when its renewal hangs",
		Property: checker.LossSignal}
	// ClaimWakeupsLost: pub/sub is at most once; a lock whose waiters
	// wait for unlock messages must not hang when one is lost
	// (redisson#5761).
	ClaimWakeupsLost = report.Claim{Source: report.RedlockSpec,
		Text:     "a client that cannot get the lock retries after a delay: waiters do not depend on being told of an unlock (pub/sub messages are at most once)",
		Property: checker.FreeLockTaken}
	// ClaimNoStarvation: a lock whose release wakes one waiter (not
	// every waiting client) must still serve each: the woken one must be
	// a waiter, and none may be passed over again and again.
	ClaimNoStarvation = report.Claim{Source: report.RedlockSpec,
		Text:     "a release wakes one waiting client, the longest waiting, and a waiter not woken still retries after a delay: with many clients waiting on one name none is passed over again and again",
		Property: checker.NoStarvation}
	// ClaimAbandonedExpires: a lock whose holder never releases it (a
	// crashed holder) frees itself when its TTL ends, also when a
	// contender reaches the key in its last millisecond.
	ClaimAbandonedExpires = report.Claim{Source: report.RedlockSpec,
		Text:     "auto-release: a lock whose holder crashed frees itself once its TTL ends, whatever contenders do at that moment",
		Property: checker.MutualExclusion}
)

func safe(c report.Claim, why string) Expectation { return Expectation{Claim: c, Safe: true, Why: why} }
func unsafe(c report.Claim, why string) Expectation {
	return Expectation{Claim: c, Safe: false, Why: why}
}

// Scenarios are the fault scenarios, in report order.
var Scenarios = []Scenario{
	{
		ID: "baseline", Summary: "no faults",
		Expect: func(Mode) Expectation { return safe(ClaimNoFaults, "no faults") },
		Faults: func(Mode, Timing, *rand.Rand) []Fault { return nil },
	},
	{
		ID:      "partition-minority",
		Summary: "a minority of the lock nodes is cut off from every client, ten times (a group: its replica link is cut, ten times)",
		Applies: func(m Mode) bool { return m.Group || m.Masters >= 3 },
		Expect: func(m Mode) Expectation {
			if m.Group {
				return safe(report.ClaimMajority, "the replica is cut off; no failover happens, so the master stays the only voice")
			}
			return safe(report.ClaimMajority, "a majority of independent masters still answers")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			if m.Group {
				return []Fault{{Kind: CutLink, At: t.Lease / 2, Hold: t.Duration - t.Lease}}
			}
			var out []Fault
			for _, n := range minorityOf(lockNodes(m)) {
				out = append(out, repeated(t, rng, 10, Fault{Kind: Partition, Nodes: []int{n}})...)
			}
			return out
		},
	},
	{
		ID:      "partition-majority",
		Summary: "a majority of the lock nodes (one node: the node) is cut off from every client, ten times",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimMajority, "without a majority nobody gets the lock: unavailable, not unsafe")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			return repeated(t, rng, 10, Fault{Kind: Partition, Nodes: majorityOf(lockNodes(m))})
		},
	},
	{
		ID: "partition-all",
		Summary: "every lock node is cut off from every client for longer than the lease " +
			"(the fencing counters sit idle past the TTL), then all come back; again and again (short lease)",
		Pace: &Pace{LeaseDiv: 4, DurationMul: 1.9},
		Expect: func(Mode) Expectation {
			return safe(report.ClaimMajority, "nobody reaches a node: unavailable, not unsafe; the fencing counters outlive the idle spell, so tokens keep increasing")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			return []Fault{{Kind: Partition, Nodes: allOf(lockNodes(m)), At: at, Hold: t.Lease + t.Lease/2}}
		},
	},
	{
		ID:      "latency",
		Summary: "every lock node answers 30 ms ± 15 ms late each way, ten times",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimValidityCheck, "the validity left after acquiring accounts for the slow round trips")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			return repeated(t, rng, 10, Fault{Kind: Latency, Nodes: allOf(lockNodes(m)), D: 30 * time.Millisecond})
		},
	},
	{
		ID: "slow-acquire",
		Summary: "a client is stalled for longer than the lease between a node's grant and its use (a pause after the reply arrived); " +
			"meanwhile its keys expire and another worker takes the lock and holds it; again and again (short lease)",
		LeasesHold: true,
		Pace:       &Pace{LeaseDiv: 4, DurationMul: 2},
		Expect: func(m Mode) Expectation {
			return safe(ClaimStalledAcquire, "the acquisition took longer than the TTL minus the drift allowance: no validity is left, the grant is given back")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			var out []Fault
			for _, f := range repeated(t, rng, 4, Fault{Kind: Stall, D: t.Lease + t.Lease/4}) {
				f.Hold = t.Lease
				out = append(out, f)
			}
			return out
		},
	},
	{
		ID: "clock-rate-fast",
		Summary: "a majority of the lock nodes (one node: the node) run their clocks 5 % fast (libfaketime x1.05, from before the run), " +
			"the locks allow 10 % drift; again and again, a worker holds the lock past its lease while the others wait for the keys to expire (short lease)",
		LeasesHold: true,
		Pace:       &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Applies:    func(m Mode) bool { return m.TunesDrift },
		Expect: func(Mode) Expectation {
			return safe(report.ClaimBoundedDrift, "keys expire after 95 % of the TTL on the fast nodes, leases end at 90 %: the drift allowance covers the difference")
		},
		Faults: clockRatePlan(1.05),
	},
	{
		ID: "clock-rate-beyond",
		Summary: "as clock-rate-fast, but the clocks run 25 % fast, beyond the 10 % the locks allow: keys expire after 80 % of the TTL, " +
			"leases end at 90 %",
		Applies: func(m Mode) bool { return m.TunesDrift },
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Expect: func(m Mode) Expectation {
			if !m.Majority && !m.Group && m.Masters > 1 {
				return safe(ClaimAllNodes, "a node with a true clock still holds the key and refuses")
			}
			return unsafe(report.ClaimBoundedDrift, "a drift rate beyond the allowance lets the fast majority free the lock while the lease is still valid")
		},
		Faults: clockRatePlan(1.25),
	},
	{
		ID:      "node-pause",
		Summary: "one lock node is frozen (SIGSTOP) longer than the lease, then continues and runs the commands queued meanwhile; again and again (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Expect: func(m Mode) Expectation {
			return safe(report.ClaimValidityCheck, "requests delayed by the pause land after their attempt was given up; they can block others until their TTL, not grant twice")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			return []Fault{{Kind: PauseNode, Nodes: []int{0}, At: at, Hold: t.Lease + t.Lease/2}}
		},
	},
	{
		ID:          "crash-restart-aof",
		Summary:     "while a worker holds the lock, a majority of the lock nodes is killed (kill -9) and restarted at once; AOF with appendfsync always; again and again (short lease)",
		Persistence: localredis.AOFAlways,
		Pace:        &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Expect: func(Mode) Expectation {
			return safe(report.ClaimRestartNeedsPersistence, "the restarted nodes come back with every acknowledged key")
		},
		Faults: crashPlan(true),
	},
	{
		ID:      "crash-restart-nopersist",
		Summary: "while a worker holds the lock, a majority of the lock nodes is killed and restarted at once, without persistence: they come back empty; again and again (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Expect: func(m Mode) Expectation {
			switch {
			case !m.Majority && !m.Group && m.Masters > 1:
				return safe(ClaimAllNodes, "a node that did not restart still holds the key and refuses")
			case m.Group:
				return unsafe(report.ClaimRestartNeedsPersistence, "the master comes back empty and its replica resyncs the empty dataset: WAIT does not help")
			case m.Masters > 1 && m.RestartDetection == RestartAlways:
				return safe(report.ClaimRestartNeedsPersistence, "the restarted majority forgets the holder's key, but restart detection keeps it from voting for a TTL: nobody else gathers a quorum while the lease is valid")
			case m.Masters > 1:
				return unsafe(report.ClaimRestartNeedsPersistence, "the restarted majority forgets the holder's key (no restart detection in this mode)")
			}
			return unsafe(report.ClaimRestartNeedsPersistence, "the only voice forgets the lock while its holder still works")
		},
		Faults: crashPlan(false),
	},
	{
		ID:      "crash-restart-delayed",
		Summary: "while a worker holds the lock, a majority of the lock nodes is killed without persistence and restarted only after the lease time (the max TTL); again and again (short lease)",
		// A quorum of restarted nodes hands out tokens from counters that
		// started again: 1 regression in 11 strikes in a quick run.
		ForgetsFences: true,
		Pace:          &Pace{LeaseDiv: 4, DurationMul: 2},
		Expect: func(Mode) Expectation {
			return safe(report.ClaimRestartNeedsPersistence, "every lease granted before the crash has expired when the nodes come back empty")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			// A majority killed without persistence under a holder (kept 3/4
			// of a lease) and restarted only after the max TTL (1¼ leases).
			var out []Fault
			for _, f := range repeated(t, rng, 4, Fault{Kind: Crash, Held: true, Nodes: majorityOf(lockNodes(m)), D: t.Lease * 3 / 4}) {
				f.Hold = t.Lease + t.Lease/4
				out = append(out, f)
			}
			return out
		},
	},
	crashRestartMinority,
	{
		ID: "failover",
		Summary: "split brain: the master is cut off from its replica, the replica is promoted; half of the clients keep the old master's address, half follow the new master; " +
			"healed (the old master resyncs as a replica) and again, as often as fits (short lease)",
		Applies: func(m Mode) bool { return m.Group },
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 2},
		Expect: func(m Mode) Expectation {
			if m.Wait {
				return safe(report.ClaimFailoverLosesLocks, "a grant counts only once the replica acknowledged it: the cut-off master cannot grant, the promoted replica has every counted lock and no replica to acknowledge new ones")
			}
			return unsafe(report.ClaimFailoverLosesLocks, "both masters grant the lock during the split")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			return []Fault{{Kind: Failover, At: at, Hold: 2 * t.Lease}}
		},
	},
	{
		ID: "client-pause",
		Summary: "the holder (the first worker to read under the lock once the pause starts) is paused before its write for longer than its lease; " +
			"it writes and releases once another worker holds the lock in a long critical section; again and again (short lease)",
		Pace: &Pace{LeaseDiv: 4, DurationMul: 2},
		Expect: func(m Mode) Expectation {
			if m.Fencing {
				return safe(report.ClaimFencingProtects, "the paused write carries an older token than the next holder's and is rejected")
			}
			return unsafe(report.ClaimPauseWithoutFencing, "the paused write lands after the next holder's and is accepted")
		},
		LeasesHold: true,
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			return []Fault{{Kind: ClientStop, Held: true, At: at, D: t.Lease + t.Lease/4}}
		},
	},
	{
		ID: "clock-offset",
		Summary: "every lock node's wall clock is ahead of the clients' by three quarters of the lease (libfaketime, set before the run: " +
			"the same as client clocks that are behind); again and again, a worker holds the lock for half its lease (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Applies: func(m Mode) bool { return !m.Group },
		Expect: func(m Mode) Expectation {
			if m.AbsoluteExpiry {
				return unsafe(ClaimClockOffset, "the expiry is an absolute time read from the client's clock (PXAT): nodes three quarters of a lease ahead "+
					"expire each key a quarter of a lease after it was set, while its holder counts on the whole lease")
			}
			return safe(ClaimClockOffset, "the TTL goes to the nodes relative (PX): an offset between the clocks moves no expiry")
		},
		NotOn: map[Runner]string{Sim: "the simulated nodes count TTLs down on their own clocks and the simulated clients share one virtual clock: an offset between client and node wall clocks (PXAT) is not modelled"},
	},
	{
		ID: "holder-isolated",
		Summary: "leases renewed by a watchdog; the holder is cut off from every lock node while it works " +
			"longer than the lease, then writes: the watchdog cannot renew, the lease is lost, another worker gets the lock; again and again (short lease)",
		LeasesHold: true,
		Pace:       &Pace{LeaseDiv: 4, DurationMul: 2.5},
		Expect: func(m Mode) Expectation {
			return unsafe(report.ClaimLeasesNotMutex, "renewal needs the network; the holder learns of the loss only after its work")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			// The holder works 2½ leases, as in the matrix: it goes on untold
			// for over a lease after the takeover, well past the checker's
			// signal grace.
			return []Fault{{Kind: Isolate, Held: true, At: at, D: t.Lease * 5 / 2}}
		},
	},
	{
		ID: "renewal-hang",
		Summary: "leases renewed in the background; the holder's links to every lock node hang (packets held, no reset) while it works 1¾ leases: " +
			"its renewals hang, its keys expire and another worker takes the lock; the holder must have been told by then (200 ms grace); a series (whole lease, long cell)",
		LeasesHold: true,
		// The lease is not shortened: a renewal that hangs to a deadline a
		// whole validity away tells its holder up to half a validity late,
		// which must exceed the grace. Ten strikes of 1¾ leases and a
		// rest fit in 7½ times the cell.
		Pace:    &Pace{LeaseDiv: 1, DurationMul: 7.5},
		Applies: func(m Mode) bool { return !m.FixedLease },
		Expect: func(m Mode) Expectation {
			if m.LateLossSignal {
				return unsafe(ClaimLossSignalled, "a hung renewal runs to its own deadline, a whole validity after it started, "+
					"so the holder is told up to half a validity after its keys expired")
			}
			return safe(ClaimLossSignalled, "the watchdog's renewal is bounded by the attempt timeout and the lease's validity: "+
				"a lease it cannot renew ends before its keys can expire")
		},
		NotOn: map[Runner]string{Sim: "a simulated link that drops a message breaks its connection (a hole in a TCP stream); a link that holds packets without a reset, as toxiproxy's timeout toxic does, is not modelled"},
	},
	{
		ID:      "clock-jump",
		Summary: "while a worker holds the lock, one lock node's clock jumps forward by the lease time: its keys expire at once (PTTL rewritten); again and again (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.2},
		Expect: func(m Mode) Expectation {
			switch {
			case !m.Majority && !m.Group && m.Masters > 1:
				return safe(ClaimAllNodes, "the other nodes still hold the key and refuse")
			case m.Majority && m.Masters > 1:
				return unsafe(report.ClaimClockJump, "a holder with a bare majority loses one vote (likely only under contention)")
			}
			return unsafe(report.ClaimClockJump, "the only voice expires the key while its holder still works")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
			return []Fault{{Kind: ClockJump, Held: true, Nodes: []int{0}, At: at, D: t.Lease, Hold: t.Lease * 3 / 4}}
		},
	},
	{
		ID: "clock-jump-partition",
		Summary: "Kleppmann's example: half of the clients reach nodes A, B, C, the other half C, D, E; " +
			"while a worker holds the lock, C's clock jumps forward (with 3 nodes: A, B and B, C; B jumps); the split lasts the whole run, the jumps strike again and again (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.5},
		Applies: func(m Mode) bool { return !m.Group && m.Masters >= 3 },
		Expect: func(m Mode) Expectation {
			if !m.Majority {
				return safe(ClaimAllNodes, "no side reaches every node: nobody gets the lock while the partition lasts")
			}
			return unsafe(report.ClaimClockJump, "after the jump the other side gets a majority while the holder's lease is valid")
		},
		Faults: kleppmannPlan,
	},
	{
		ID: "expiry-race",
		Summary: "next to the workers, holders take locks of their own (one per round, the fast path's SET NX PX) for 40 ms and abandon them, as crashed holders; " +
			"a contender watches each key's PTTL and fires TryLock in its last millisecond (PTTL 0), then abandons what it got",
		Applies: func(m Mode) bool { return !m.Fencing },
		Expect: func(Mode) Expectation {
			return safe(ClaimAbandonedExpires, "a key in its last millisecond is expiring: the contender's promotion deletes it instead of rebuilding it without a TTL, so every abandoned lock frees itself")
		},
		Faults: func(m Mode, t Timing, rng *rand.Rand) []Fault {
			var out []Fault
			for i := range 10 {
				at := t.Lease/2 + time.Duration(i)*(t.Duration-t.Lease)/10 + time.Duration(rng.Int64N(int64(t.Lease/2)))
				out = append(out, Fault{Kind: ExpiryRace, At: at, D: 40 * time.Millisecond})
			}
			return out
		},
	},
	{
		ID:          "random",
		Summary:     "a seeded nemesis: one fault at a time (partition, refusal, reply loss, latency, pause, crash-restart with AOF; failover for a group) on a random node (short lease)",
		Persistence: localredis.AOFAlways,
		Pace:        &Pace{LeaseDiv: 4, DurationMul: 1.4},
		Expect: func(m Mode) Expectation {
			if m.Group && !m.Wait {
				return unsafe(report.ClaimFailoverLosesLocks, "the nemesis may fail the group over (split brain)")
			}
			if m.Group {
				return safe(report.ClaimFailoverLosesLocks, "WAIT keeps failovers from losing counted grants; the other faults cost availability only")
			}
			return safe(report.ClaimMajority, "every fault is one the lock claims to survive")
		},
		Faults: randomPlan,
	},
	{
		ID: "lost-wakeups",
		Summary: "unlock messages (pub/sub) to the workers are dropped, or delayed by 300 ms, connections kept, in ten windows, each with a holder kept a fifth of its lease; " +
			"workers think half a second after a release; no other fault: waiters must take a free lock within the wakeup bound (1.2 × the retry interval + an attempt timeout)",
		Expect: func(Mode) Expectation {
			return safe(ClaimWakeupsLost, "a waiter that hears no unlock message retries after at most 1.2 × the retry interval")
		},
		Applies: func(m Mode) bool { return m.Ours },
		Pace:    &Pace{DurationMul: 3},
		Faults:  lostWakeupsPlan,
		Think:   500 * time.Millisecond,
	},
	{
		ID: "herd",
		Summary: "no fault; every worker takes the lock straight back after a release, so each release finds the others waiting on the name: " +
			"no waiter may be passed over by more than the starvation bound of later acquires, and a free lock is taken within the wakeup bound",
		Expect: func(Mode) Expectation {
			return safe(ClaimNoStarvation, "a release wakes the longest-waiting client; one not woken retries within 1.2 × the retry interval")
		},
		Applies: func(m Mode) bool { return m.Ours },
		Pace:    &Pace{DurationMul: 2},
		Faults:  func(Mode, Timing, *rand.Rand) []Fault { return nil },
	},
	{
		ID:      "minority",
		Summary: "the simulation's soak: overlapping faults, each on a minority of the lock nodes, of every kind a majority lock claims to survive",
		Applies: func(m Mode) bool { return m.Majority && m.Masters >= 3 },
		Expect: func(Mode) Expectation {
			return safe(report.ClaimMajority, "every fault is one the lock claims to survive")
		},
		Faults: minorityPlan,
		NotOn:  map[Runner]string{Matrix: "a soak of many seeds of 30 s each: the simulation's job (the matrix runs random instead)"},
	},
}

// On returns the scenarios runner r runs, in report order.
func On(r Runner) []Scenario {
	var out []Scenario
	for _, s := range Scenarios {
		if ok, _ := s.RunsOn(r); ok {
			out = append(out, s)
		}
	}
	return out
}

// FindScenario returns the scenario with the given id among scenarios.
func FindScenario(scenarios []Scenario, id string) (Scenario, bool) {
	for _, s := range scenarios {
		if s.ID == id {
			return s, true
		}
	}
	return Scenario{}, false
}

// SelectScenarios returns the scenarios named in a comma-separated list
// ("" or "all": every scenario), in the list's order.
func SelectScenarios(all []Scenario, list string) ([]Scenario, error) {
	if list == "" || list == "all" {
		return append([]Scenario(nil), all...), nil
	}
	var out []Scenario
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		s, ok := FindScenario(all, id)
		if !ok {
			ids := make([]string, len(all))
			for i, s := range all {
				ids[i] = s.ID
			}
			return nil, fmt.Errorf("catalog: unknown scenario %q; known: %s", id, strings.Join(ids, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
