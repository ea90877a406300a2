package matrix

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/localredis"
)

// Expectation is what the literature predicts for one mode under one
// scenario: the claim tested, whether the mode is expected safe, and why.
type Expectation struct {
	Claim report.Claim
	Safe  bool
	Why   string
}

// Scenario is a fault pattern from the chaos harness, applied to a cell's
// cluster while the workload runs.
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
	// Pace, if set, adapts the run's timing to the scenario (see Pace).
	Pace *Pace
	// plan builds the faults against a running cell.
	plan func(*cell) (plan, error)
}

// Pace is how a scenario whose every fault event outlasts the lease (a
// pause past the lease, a restart after the max TTL, a holder kept past its
// lease) fits RepeatEvents strikes in a cell: it runs with a shorter lease
// and for longer than the run's timing says.
type Pace struct {
	// LeaseDiv divides the lease (never below MinPacedLease, nor below
	// 4/3 of the attempt timeout: a lease must outlast an attempt).
	LeaseDiv int
	// DurationMul multiplies the cell's duration.
	DurationMul float64
}

// MinPacedLease is the shortest lease a Pace gives.
const MinPacedLease = 250 * time.Millisecond

// CellTiming is the timing cell c runs with under the run's timing t: t
// itself, or t paced by the scenario.
func (c Cell) CellTiming(t Timing) Timing {
	p := c.Scenario.Pace
	if p == nil {
		return t
	}
	if p.LeaseDiv > 1 {
		t.Lease = min(t.Lease, max(t.Lease/time.Duration(p.LeaseDiv), MinPacedLease, t.AttemptTimeout*4/3))
	}
	if p.DurationMul > 0 {
		t.Duration = time.Duration(float64(t.Duration) * p.DurationMul).Round(100 * time.Millisecond)
	}
	return t
}

// plan is what a scenario does to one cell.
type plan struct {
	// nodes gives worker w's node addresses (nil: every worker reaches
	// every lock node through its client proxy).
	nodes func(w int) []*redis.Options
	// schedule runs from the workers' start.
	schedule chaos.Schedule
	// nemesis, if set, runs from nemesisFrom until nemesisTo.
	nemesis                *chaos.Nemesis
	nemesisFrom, nemesisTo time.Duration
	// moves counts the nemesis's injections (it runs past nemesisTo until
	// RepeatEvents, up to the cell's overtime); nemesisDone closes when it
	// stopped.
	moves       *atomic.Int64
	nemesisDone chan struct{}
	gates       map[int]workload.Gate
	// watchdog: leases are renewed while held instead of fixed.
	watchdog bool
	// hooks, if set, gives worker w's connections a go-redis hook.
	hooks func(w int) redis.Hook
	// driftFactor, if set, is the lock's clock drift factor instead of
	// its default.
	driftFactor float64
	// before are injected before the workers start and recovered after
	// they stopped (a whole-run condition, such as a node clock's rate).
	before []chaos.Fault
	// settings name the faults of the schedule that are the cell's
	// setting for the whole run (a split that lasts the run), not fault
	// events: the count of fault events leaves them out, as it leaves out
	// before.
	settings []string
}

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
	// ClaimAbandonedExpires: a lock whose holder never releases it (a
	// crashed holder) frees itself when its TTL ends, also when a
	// contender reaches the key in its last millisecond.
	ClaimAbandonedExpires = report.Claim{Source: report.RedlockSpec,
		Text:     "auto-release: a lock whose holder crashed frees itself once its TTL ends, whatever contenders do at that moment",
		Property: checker.MutualExclusion}
)

// Timing of a cell. Scenario schedules are laid out from it.
type Timing struct {
	// Duration is how long the workers run.
	Duration time.Duration
	// Lease is the workload's fixed lease time (the "max TTL").
	Lease time.Duration
	// Workers is the number of workers, each with its own lock client.
	Workers int
	// Work is the time between read and write.
	Work workload.Range
	// AttemptTimeout, if set, is the quorum lock's attempt timeout
	// (quorum.WithAttemptTimeout) instead of its default; the peers' locks
	// ignore it. The tests set it: on a loaded CI machine the default 1/5
	// share of 250 ms per node is less than one round trip through the
	// in-process toxiproxy, and a cell then acquires nothing.
	AttemptTimeout time.Duration
	// MinContested is how many contested acquisitions (attempts made while
	// a fault was in effect and another worker held a valid lease) a cell
	// expected safe needs for a "reproduced" verdict; with fewer it is
	// inconclusive. 0: no minimum.
	MinContested int
}

// Quick is the timing of `quorumlock chaos --quick`.
var Quick = Timing{Duration: 3 * time.Second, Lease: time.Second, Workers: 4,
	Work: workload.Range{Min: 2 * time.Millisecond, Max: 10 * time.Millisecond}, MinContested: QuickMinContested}

// Full is the default timing.
var Full = Timing{Duration: 8 * time.Second, Lease: 2 * time.Second, Workers: 4,
	Work: workload.Range{Min: 2 * time.Millisecond, Max: 20 * time.Millisecond}, MinContested: FullMinContested}

// The contested acquisitions an expected-safe cell needs for a "safe"
// verdict, in the default run and in a quick one.
const (
	FullMinContested  = 100
	QuickMinContested = 10
)

// Validate checks that the timing leaves room for every scenario: a
// delayed restart and a client pause outlast the lease and still end
// before the workers stop.
func (t Timing) Validate() error {
	if t.Workers < 2 {
		return fmt.Errorf("matrix: need at least 2 workers (contention, and one on each side of a split), got %d", t.Workers)
	}
	if t.AttemptTimeout < 0 || t.AttemptTimeout >= t.Lease {
		return fmt.Errorf("matrix: attempt timeout %v must be ≥ 0 (0: the lock's default) and below the lease time %v", t.AttemptTimeout, t.Lease)
	}
	if t.Lease < 200*time.Millisecond {
		return fmt.Errorf("matrix: lease time %v too short; at least 200ms", t.Lease)
	}
	if t.Duration < 5*t.Lease/2 {
		return fmt.Errorf("matrix: duration %v too short for lease time %v; at least 2.5 × the lease (%v)", t.Duration, t.Lease, 5*t.Lease/2)
	}
	return nil
}

// RepeatEvents is how often the repeated faults (partitions, latency)
// strike in a cell: each fault event is a new moment to test the lock
// (issue 13 asks for at least ten per cell).
const RepeatEvents = 10

// repeated is faults (injected together) struck RepeatEvents times between
// start and the lease's last quarter before the end: each period is 60 %
// fault, 40 % healed. The strikes are a series, one after the other: as
// steps at fixed moments, a strike whose heal ran late on a loaded machine
// overlapped the next one's inject of the same fault ("toxic already
// exists").
func (c *cell) repeated(faults ...chaos.Fault) chaos.Step {
	t := c.timing
	window := t.Duration - t.Lease/4 - t.start()
	period := window / RepeatEvents
	s := newSeries(&series{name: c.sc.ID, period: period, n: RepeatEvents, min: RepeatEvents,
		until: window, limit: c.overtime() - t.start(),
		next: func(int) (chaos.Fault, time.Duration) { return c.faults(faults...), period * 3 / 5 }})
	c.repeaters = append(c.repeaters, s.done)
	return chaos.Step{At: t.start(), Fault: s} // Recover waits for the series
}

// strikes is a schedule step that strikes again and again, one strike at
// a time (a series): from the end of the first lease (the workers are under
// way) until the lease's last quarter before the end of the run, with rest
// between strikes. next gives strike i and how long it is held once in.
func (c *cell) strikes(rest time.Duration, next func(i int) (chaos.Fault, time.Duration)) chaos.Step {
	t := c.timing
	from := t.Lease
	s := newSeries(&series{name: c.sc.ID, next: next, rest: rest, until: t.Duration - t.Lease/4 - from,
		min: RepeatEvents, limit: c.overtime() - from})
	c.repeaters = append(c.repeaters, s.done)
	return chaos.Step{At: from, Fault: s} // Recover waits for the series
}

// overtime is the latest a series may strike, from the workers' start, to
// reach RepeatEvents strikes when a loaded machine slowed them down: the
// cell then runs on past its duration, up to twice it.
func (c *cell) overtime() time.Duration { return 2*c.timing.Duration - c.timing.Lease/4 }

// strikeRest is the healthy time between two strikes of a series: long
// enough for the workers to take the lock a few times.
func (t Timing) strikeRest() time.Duration { return t.Lease / 4 }

// holdingStrike is one strike of faults (none: only the long critical
// section) injected while a worker holds the lock in a critical section
// of slow, through the series' shared gate g; it is held for hold, and at
// least as long as the critical section.
func (c *cell) holdingStrike(g *holdGate, slow, hold time.Duration, faults ...chaos.Fault) (chaos.Fault, time.Duration) {
	var f chaos.Fault
	if len(faults) > 0 {
		f = c.faults(faults...)
	}
	w := c.holdOn(g, slow, f, nil)
	return w, max(hold, slow)
}

// holdOn is a whileHolding over gate g (shared by the strikes of a series,
// one at a time) that waits two leases for a holder. A section shorter
// than the lease is meant to end inside the holder's lease: the gate holds
// only a holder whose lease has the section and a twentieth of the lease
// left (a worker that got the lock with little validity is let through).
// A longer one keeps the holder past its lease on purpose.
func (c *cell) holdOn(g *holdGate, slow time.Duration, f chaos.Fault, pick func(int) chaos.Fault) *whileHolding {
	w := &whileHolding{gate: g, f: f, pick: pick, wait: 2 * c.timing.Lease, slow: slow, rec: c.rec, name: slowHolder}
	if need := slow + c.timing.Lease/20; need < c.timing.Lease {
		w.need = need
	}
	return w
}

// holdingSeries is the plan of a series of holding strikes through one
// gate every worker passes.
func (c *cell) holdingSeries(g *holdGate, next func(i int) (chaos.Fault, time.Duration)) plan {
	return c.holdingPlan(c.strikes(c.timing.strikeRest(), next), g)
}

// start is when most scenarios inject their fault.
func (t Timing) start() time.Duration { return t.Duration / 6 }

// lockNodes are the nodes a worker locks on: every independent master, or
// the group's master.
func (c *cell) lockNodes() []*chaos.Node {
	if c.mode.Group {
		return []*chaos.Node{c.cluster.Groups[0].Master()}
	}
	return c.cluster.Masters
}

func (c *cell) at(at, hold time.Duration, f chaos.Fault) chaos.Step {
	return chaos.Step{At: at, Hold: hold, Fault: record(c.rec, f)}
}

// slowHolder is the name of the nemesis event that marks the long critical
// section of the holder a whileHolding fault waits for.
const slowHolder = checker.HeldSection

// faults records faults and makes them one (injected together).
func (c *cell) faults(faults ...chaos.Fault) chaos.Fault {
	if len(faults) == 1 {
		return record(c.rec, faults[0])
	}
	var names []string
	recs := make([]chaos.Fault, len(faults))
	for i, x := range faults {
		recs[i] = record(c.rec, x)
		names = append(names, x.String())
	}
	return &group{name: strings.Join(names, "+"), faults: recs}
}

// majority returns the first ⌊n/2⌋+1 lock nodes.
func (c *cell) majority() []*chaos.Node {
	nodes := c.lockNodes()
	return nodes[:len(nodes)/2+1]
}

// crashes returns a crash fault per node.
func crashes(nodes []*chaos.Node, restart bool) []chaos.Fault {
	out := make([]chaos.Fault, len(nodes))
	for i, n := range nodes {
		out[i] = &chaos.Crash{Node: n, Restart: restart}
	}
	return out
}

// holdingPlan is the plan of one holding step whose gate every worker
// passes.
func (c *cell) holdingPlan(step chaos.Step, g *holdGate) plan {
	gates := map[int]workload.Gate{}
	for w := range c.timing.Workers {
		gates[w] = g.For(w)
	}
	return plan{schedule: chaos.Schedule{step}, gates: gates}
}

// minority is how many of n nodes a majority lock can lose.
func minority(n int) int { return (n - 1) / 2 }

func always(Mode) bool { return true }

func safe(c report.Claim, why string) Expectation { return Expectation{Claim: c, Safe: true, Why: why} }
func unsafe(c report.Claim, why string) Expectation {
	return Expectation{Claim: c, Safe: false, Why: why}
}

// Scenarios are the fault scenarios of the matrix, in report order.
var Scenarios = []Scenario{
	{
		ID: "baseline", Summary: "no faults",
		Expect: func(Mode) Expectation { return safe(ClaimNoFaults, "no faults") },
		plan:   func(*cell) (plan, error) { return plan{}, nil },
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
		plan: func(c *cell) (plan, error) {
			var s chaos.Schedule
			if c.mode.Group {
				s = append(s, c.repeated(&chaos.CutLink{Group: c.cluster.Groups[0]}))
			} else {
				var cuts []chaos.Fault
				for _, n := range c.cluster.Masters[:minority(len(c.cluster.Masters))] {
					cuts = append(cuts, &chaos.Partition{Proxy: n.Proxy()})
				}
				s = append(s, c.repeated(cuts...))
			}
			return plan{schedule: s}, nil
		},
	},
	{
		ID:      "partition-majority",
		Summary: "a majority of the lock nodes (one node: the node) is cut off from every client, ten times",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimMajority, "without a majority nobody gets the lock: unavailable, not unsafe")
		},
		plan: func(c *cell) (plan, error) {
			nodes := c.lockNodes()
			var cuts []chaos.Fault
			for _, n := range nodes[:len(nodes)/2+1] {
				cuts = append(cuts, &chaos.Partition{Proxy: n.Proxy()})
			}
			return plan{schedule: chaos.Schedule{c.repeated(cuts...)}}, nil
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			return plan{schedule: chaos.Schedule{c.strikes(t.Lease/2, func(int) (chaos.Fault, time.Duration) {
				var cuts []chaos.Fault
				for _, n := range c.lockNodes() {
					cuts = append(cuts, &chaos.Partition{Proxy: n.Proxy()})
				}
				return c.faults(cuts...), t.Lease + t.Lease/2
			})}}, nil
		},
	},
	{
		ID:      "latency",
		Summary: "every lock node answers 30 ms ± 15 ms late each way, ten times",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimValidityCheck, "the validity left after acquiring accounts for the slow round trips")
		},
		plan: func(c *cell) (plan, error) {
			var slow []chaos.Fault
			for _, n := range c.lockNodes() {
				slow = append(slow, &chaos.Latency{Proxy: n.Proxy(), Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond})
			}
			return plan{schedule: chaos.Schedule{c.repeated(slow...)}}, nil
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			st := &stall{d: t.Lease + t.Lease/4, rec: c.rec}
			g := &holdGate{}
			p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
				// Half a lease: it covers the stalled client's return (a
				// quarter lease after the keys expired) and ends well inside
				// the holder's own lease, also on a loaded machine.
				wh := c.holdOn(g, t.Lease/2, nil, nil)
				return &stallFault{s: st, wait: 2 * t.Lease, next: wh}, wh.slow
			})
			p.hooks = st.For
			return p, nil
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
		plan: func(c *cell) (plan, error) { return clockRatePlan(c, 1.05) },
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
		plan: func(c *cell) (plan, error) { return clockRatePlan(c, 1.25) },
	},
	{
		ID:      "node-pause",
		Summary: "one lock node is frozen (SIGSTOP) longer than the lease, then continues and runs the commands queued meanwhile; again and again (short lease)",
		Pace:    &Pace{LeaseDiv: 4, DurationMul: 1.7},
		Expect: func(m Mode) Expectation {
			return safe(report.ClaimValidityCheck, "requests delayed by the pause land after their attempt was given up; they can block others until their TTL, not grant twice")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			return plan{schedule: chaos.Schedule{c.strikes(t.Lease/2, func(int) (chaos.Fault, time.Duration) {
				return record(c.rec, &chaos.Pause{Node: c.lockNodes()[0]}), t.Lease + t.Lease/4
			})}}, nil
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
		plan: func(c *cell) (plan, error) {
			g := &holdGate{}
			return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
				return c.holdingStrike(g, c.timing.Lease*3/4, 0, crashes(c.majority(), true)...)
			}), nil
		},
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
			case m.Masters > 1:
				return unsafe(report.ClaimRestartNeedsPersistence, "the restarted majority forgets the holder's key (no restart detection in this mode)")
			}
			return unsafe(report.ClaimRestartNeedsPersistence, "the only voice forgets the lock while its holder still works")
		},
		plan: func(c *cell) (plan, error) {
			g := &holdGate{}
			return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
				return c.holdingStrike(g, c.timing.Lease*3/4, 0, crashes(c.majority(), true)...)
			}), nil
		},
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			g := &holdGate{}
			return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
				return c.holdingStrike(g, t.Lease*3/4, t.Lease+t.Lease/4, crashes(c.majority(), false)...)
			}), nil
		},
	},
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			g := c.cluster.Groups[0]
			pn := &pin{n: g.Master()}
			return plan{nodes: splitGroup(g, pn), schedule: chaos.Schedule{c.strikes(t.strikeRest(), func(int) (chaos.Fault, time.Duration) {
				return record(c.rec, &failover{g: g, pin: pn}), t.Lease
			})}}, nil
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			paused, next := &holdGate{}, &holdGate{}
			gs := map[int]workload.Gate{}
			for w := range t.Workers {
				gs[w] = gates{paused.For(w), next.For(w)}
			}
			return plan{schedule: chaos.Schedule{c.strikes(t.strikeRest(), func(int) (chaos.Fault, time.Duration) {
				return &handover{paused: paused, next: next, wait: 2 * t.Lease,
					pause: t.Lease + t.Lease/4, slow: t.Lease * 3 / 4, rec: c.rec}, 0
			})}, gates: gs}, nil
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
		plan: clockOffsetPlan,
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
		plan: holderCutPlan,
	},
	{
		ID: "renewal-hang",
		Summary: "leases renewed in the background; the holder's links to every lock node hang (packets held, no reset) while it works 2½ leases: " +
			"its renewals hang, its keys expire and another worker takes the lock; the holder must have been told by then (200 ms grace); a series (whole lease, long cell)",
		LeasesHold: true,
		Pace:       &Pace{LeaseDiv: 1, DurationMul: 10},
		Applies:    func(m Mode) bool { return !m.FixedLease },
		Expect: func(m Mode) Expectation {
			if m.LateLossSignal {
				return unsafe(ClaimLossSignalled, "a hung renewal runs to its own deadline, a whole validity after it started, "+
					"so the holder is told up to half a validity after its keys expired")
			}
			return safe(ClaimLossSignalled, "the watchdog's renewal is bounded by the attempt timeout and the lease's validity: "+
				"a lease it cannot renew ends before its keys can expire")
		},
		plan: holderCutPlan,
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
		plan: func(c *cell) (plan, error) {
			t := c.timing
			g := &holdGate{}
			return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
				return c.holdingStrike(g, t.Lease*3/4, 0, clockJump(c.lockNodes()[0], t.Lease))
			}), nil
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
		plan: kleppmann,
	},
	{
		ID: "expiry-race",
		Summary: "next to the workers, holders take locks of their own (one per round, the fast path's SET NX PX) for 40 ms and abandon them, as crashed holders; " +
			"a contender watches each key's PTTL and fires TryLock in its last millisecond (PTTL 0), then abandons what it got",
		Applies: func(m Mode) bool { return !m.Fencing },
		Expect: func(Mode) Expectation {
			return safe(ClaimAbandonedExpires, "a key in its last millisecond is expiring: the contender's promotion deletes it instead of rebuilding it without a TTL, so every abandoned lock frees itself")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			e := &expiryRace{c: c}
			// The race's span is the setting; each contender fired in a
			// key's last millisecond is a fault event of its own.
			return plan{schedule: chaos.Schedule{c.at(t.start(), t.Duration-t.Lease/2-t.start(), e)}, settings: []string{e.String()}}, nil
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
		plan: randomPlan,
	},
}

// holderCutPlan gives every worker proxies of its own in front of the
// nodes and, again and again, cuts the holder alone off from every node
// (packets held, no reset) while it works 2½ leases with its lease renewed
// by a watchdog (holder-isolated, renewal-hang).
func holderCutPlan(c *cell) (plan, error) {
	t := c.timing
	tp := c.cluster.Toxiproxy()
	if tp == nil {
		return plan{}, fmt.Errorf("matrix: %s needs the embedded toxiproxy", c.sc.ID)
	}
	// Every worker reaches the nodes through proxies of its own, so
	// the holder alone can be cut off.
	opts := make([][]*redis.Options, t.Workers)
	cuts := make([][]chaos.Fault, t.Workers)
	for w := range t.Workers {
		for _, n := range c.lockNodes() {
			px, err := tp.NewProxy(fmt.Sprintf("%s-worker%d", n.Name(), w), n.Addr())
			if err != nil {
				return plan{}, err
			}
			opts[w] = append(opts[w], localredis.ClientOptions(px.Addr()))
			cuts[w] = append(cuts[w], &chaos.Partition{Proxy: px})
		}
	}
	// The holder works 2½ leases: its keys expire about one lease
	// after the cut, another worker takes over, and the holder
	// goes on untold for over a lease more — well past the
	// checker's signal grace (200 ms), so a lock that never
	// signals the loss is caught. (With 1¾ leases the untold span
	// was 190–270 ms in quick cells: the silent-watchdog mutant
	// slipped through.)
	slow := t.Lease * 5 / 2
	g := &holdGate{}
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		return c.holdOn(g, slow, nil, func(h int) chaos.Fault { return c.faults(cuts[h]...) }), slow + t.Lease/10
	})
	p.watchdog = true
	p.nodes = func(w int) []*redis.Options { return opts[w] }
	return p, nil
}

// rateDriftFactor is the drift factor of the locks in the clock-rate
// scenarios: large enough that the drift it allows outlasts scheduling
// noise on a loaded machine (10 % of a 1 s lease is 100 ms), so that a
// lock that ignores drift is caught by tens of milliseconds, not one.
const rateDriftFactor = 0.1

// clockRatePlan runs a majority of the lock nodes at rate (under
// libfaketime, for the whole run) and holds a worker in its critical
// section past its lease, so that the others take the lock over as soon
// as the fast nodes let them.
func clockRatePlan(c *cell, rate float64) (plan, error) {
	if err := chaos.ClockSupported(); err != nil {
		return plan{}, fmt.Errorf("matrix: %s needs libfaketime: %w", c.sc.ID, err)
	}
	t := c.timing
	var before []chaos.Fault
	for _, n := range c.majority() {
		before = append(before, &chaos.ClockSkew{Node: n, Rate: rate})
	}
	g := &holdGate{}
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		return c.holdingStrike(g, t.Lease+t.Lease/4, 0)
	})
	p.before, p.driftFactor = before, rateDriftFactor
	return p, nil
}

// clockOffsetPlan sets every lock node's wall clock three quarters of a
// lease ahead (under libfaketime, for the whole run) and holds a worker in
// its critical section for half its lease, well inside a lease counted
// from the node's own clock, but past the quarter lease that an expiry
// sent as an absolute client time leaves.
func clockOffsetPlan(c *cell) (plan, error) {
	if err := chaos.ClockSupported(); err != nil {
		return plan{}, fmt.Errorf("matrix: %s needs libfaketime: %w", c.sc.ID, err)
	}
	t := c.timing
	var before []chaos.Fault
	for _, n := range c.lockNodes() {
		before = append(before, &chaos.ClockSkew{Node: n, Offset: t.Lease * 3 / 4})
	}
	g := &holdGate{}
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		return c.holdingStrike(g, t.Lease/2, 0)
	})
	p.before = before
	return p, nil
}

// clockJump is a forward jump of n's clock by d, emulated on every key
// with a TTL (as a real jump would do to Redis expiry; the nodes hold only
// the lock's keys, whatever names a lock implementation gives them).
func clockJump(n *chaos.Node, d time.Duration) chaos.Fault {
	return &chaos.EmulatedClockSkew{Node: n, Match: "*", Jump: d}
}

// splitGroup puts even workers on the pinned node (the master before a
// failover: they stay there while it lasts) and odd ones on the group's
// master (they follow it at once).
func splitGroup(g *chaos.Group, pn *pin) func(w int) []*redis.Options {
	return func(w int) []*redis.Options {
		if w%2 == 0 {
			return []*redis.Options{pn.options()}
		}
		return []*redis.Options{g.Options()}
	}
}

// kleppmann gives each side of workers its own proxies in front of the
// nodes (chained to the node's client proxy), cuts each side off from the
// nodes the other side alone reaches, and makes the shared node's clock
// jump while someone holds the lock.
func kleppmann(c *cell) (plan, error) {
	t := c.timing
	nodes := c.cluster.Masters
	n := len(nodes)
	q := n/2 + 1
	reach := [2][2]int{{0, q}, {n - q, n}} // [from, to) per side
	tp := c.cluster.Toxiproxy()
	if tp == nil {
		return plan{}, fmt.Errorf("matrix: %s needs the embedded toxiproxy", "clock-jump-partition")
	}
	opts := [2][]*redis.Options{}
	var cuts []chaos.Fault
	for side := range 2 {
		for i, nd := range nodes {
			px, err := tp.NewProxy(fmt.Sprintf("%s-side%d", nd.Name(), side), nd.Addr())
			if err != nil {
				return plan{}, err
			}
			opts[side] = append(opts[side], localredis.ClientOptions(px.Addr()))
			if i < reach[side][0] || i >= reach[side][1] {
				cuts = append(cuts, &chaos.Partition{Proxy: px})
			}
		}
	}
	var s chaos.Schedule
	var split []string
	for _, f := range cuts {
		s = append(s, c.at(0, t.Duration-t.Lease/4, f))
		split = append(split, f.String())
	}
	g := &holdGate{}
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		return c.holdingStrike(g, t.Lease*3/4, 0, clockJump(nodes[q-1], t.Lease))
	})
	p.schedule = append(s, p.schedule...)
	p.settings = split
	p.nodes = func(w int) []*redis.Options { return opts[w%2] }
	return p, nil
}

// randomPlan is a seeded nemesis over faults every mode but failover claims
// to survive, one at a time.
func randomPlan(c *cell) (plan, error) {
	t := c.timing
	var faults []chaos.Fault
	for _, n := range c.lockNodes() {
		faults = append(faults,
			&chaos.Partition{Proxy: n.Proxy()},
			&chaos.Partition{Proxy: n.Proxy(), Loud: true},
			&chaos.ReplyLoss{Proxy: n.Proxy()},
			&chaos.Latency{Proxy: n.Proxy(), Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond},
			&chaos.Pause{Node: n},
			&chaos.Crash{Node: n, Restart: true},
		)
	}
	var nodes func(int) []*redis.Options
	if c.mode.Group {
		g := c.cluster.Groups[0]
		pn := &pin{n: g.Master()}
		faults = append(faults, &failover{g: g, pin: pn}, &failover{g: g, pin: pn}, &chaos.CutLink{Group: g})
		nodes = splitGroup(g, pn)
	}
	moves := &atomic.Int64{}
	for i, f := range faults {
		faults[i] = counted{f: record(c.rec, f), n: moves}
	}
	return plan{
		nodes: nodes,
		nemesis: &chaos.Nemesis{Seed: c.seed, Faults: faults,
			Hold: chaos.Range{Min: t.Lease * 2 / 5, Max: t.Lease * 9 / 10},
			Rest: chaos.Range{Min: t.Lease / 5, Max: t.Lease / 2}},
		nemesisFrom: t.Duration / 10,
		nemesisTo:   t.Duration - t.Lease/4,
		moves:       moves,
	}, nil
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
			return nil, fmt.Errorf("matrix: unknown scenario %q; known: %s", id, strings.Join(ids, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
