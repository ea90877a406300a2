package matrix

import (
	"errors"
	"fmt"
	"strings"
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
	// plan builds the faults against a running cell.
	plan func(*cell) (plan, error)
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
	gates                  map[int]workload.Gate
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

// repeated is f struck RepeatEvents times between start and the lease's
// last quarter before the end: each period is 60 % fault, 40 % healed.
func (c *cell) repeated(f chaos.Fault) []chaos.Step {
	t := c.timing
	period := (t.Duration - t.Lease/4 - t.start()) / RepeatEvents
	out := make([]chaos.Step, RepeatEvents)
	for i := range out {
		out[i] = c.at(t.start()+time.Duration(i)*period, period*3/5, f)
	}
	return out
}

// start is when most scenarios inject their fault; hold how long they keep it.
func (t Timing) start() time.Duration { return t.Duration / 6 }
func (t Timing) hold() time.Duration  { return t.Duration / 2 }

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

// holding returns a step that injects faults (all at once) while a worker
// holds the lock in a long critical section (3/4 of the lease: its lease is
// still valid when it writes), and the gate that makes the holder wait: the
// first worker to reach its critical section once the step starts. The step holds the faults for hold after they
// are in, and at least as long as the slow critical section.
func (c *cell) holding(at, hold time.Duration, faults ...chaos.Fault) (chaos.Step, *holdGate) {
	w := c.whileHolding(c.timing.Lease*3/4, c.faults(faults...), nil)
	return c.holdStep(at, hold, w), w.gate
}

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

// whileHolding makes a whileHolding over a fresh gate that waits for a
// holder for up to half the run.
func (c *cell) whileHolding(slow time.Duration, f chaos.Fault, pick func(int) chaos.Fault) *whileHolding {
	return &whileHolding{gate: &holdGate{}, f: f, pick: pick, wait: c.timing.Duration / 2, slow: slow, rec: c.rec, name: slowHolder}
}

// holdStep is the schedule step of w: at at, held for hold after the faults
// are in, and at least as long as the slow critical section.
func (c *cell) holdStep(at, hold time.Duration, w *whileHolding) chaos.Step {
	return chaos.Step{At: at, Hold: max(hold, w.slow), Fault: w}
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
		Summary: "a minority of the lock nodes is cut off from every client, ten times (a group: its replica link is cut, once)",
		Applies: func(m Mode) bool { return m.Group || m.Masters >= 3 },
		Expect: func(m Mode) Expectation {
			if m.Group {
				return safe(report.ClaimMajority, "the replica is cut off; no failover happens, so the master stays the only voice")
			}
			return safe(report.ClaimMajority, "a majority of independent masters still answers")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			var s chaos.Schedule
			if c.mode.Group {
				s = append(s, c.at(t.start(), t.hold(), &chaos.CutLink{Group: c.cluster.Groups[0]}))
			} else {
				for _, n := range c.cluster.Masters[:minority(len(c.cluster.Masters))] {
					s = append(s, c.repeated(&chaos.Partition{Proxy: n.Proxy()})...)
				}
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
			var s chaos.Schedule
			for _, n := range nodes[:len(nodes)/2+1] {
				s = append(s, c.repeated(&chaos.Partition{Proxy: n.Proxy()})...)
			}
			return plan{schedule: s}, nil
		},
	},
	{
		ID: "partition-all",
		Summary: "every lock node is cut off from every client for longer than the lease " +
			"(the fencing counters sit idle past the TTL), then all come back",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimMajority, "nobody reaches a node: unavailable, not unsafe; the fencing counters outlive the idle spell, so tokens keep increasing")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			var s chaos.Schedule
			for _, n := range c.lockNodes() {
				s = append(s, c.at(t.start(), t.Lease+t.Lease/2, &chaos.Partition{Proxy: n.Proxy()}))
			}
			return plan{schedule: s}, nil
		},
	},
	{
		ID:      "latency",
		Summary: "every lock node answers 30 ms ± 15 ms late each way, ten times",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimValidityCheck, "the validity left after acquiring accounts for the slow round trips")
		},
		plan: func(c *cell) (plan, error) {
			var s chaos.Schedule
			for _, n := range c.lockNodes() {
				s = append(s, c.repeated(&chaos.Latency{Proxy: n.Proxy(), Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond})...)
			}
			return plan{schedule: s}, nil
		},
	},
	{
		ID: "slow-acquire",
		Summary: "a client is stalled for longer than the lease between a node's grant and its use (a pause after the reply arrived); " +
			"meanwhile its keys expire and another worker takes the lock and holds it",
		LeasesHold: true,
		Expect: func(m Mode) Expectation {
			return safe(ClaimStalledAcquire, "the acquisition took longer than the TTL minus the drift allowance: no validity is left, the grant is given back")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			st := &stall{d: t.Lease + t.Lease/4, rec: c.rec}
			wh := c.whileHolding(t.Lease*3/4, nil, nil)
			f := &stallFault{s: st, wait: t.Duration / 2, next: wh}
			p := c.holdingPlan(chaos.Step{At: t.start(), Hold: wh.slow, Fault: f}, wh.gate)
			p.hooks = st.For
			return p, nil
		},
	},
	{
		ID: "clock-rate-fast",
		Summary: "a majority of the lock nodes (one node: the node) run their clocks 5 % fast (libfaketime x1.05, from before the run), " +
			"the locks allow 10 % drift; while a worker holds the lock past its lease, the others wait for the keys to expire",
		LeasesHold: true,
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
		Summary: "one lock node is frozen (SIGSTOP) longer than the lease, then continues and runs the commands queued meanwhile",
		Expect: func(m Mode) Expectation {
			return safe(report.ClaimValidityCheck, "requests delayed by the pause land after their attempt was given up; they can block others until their TTL, not grant twice")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			return plan{schedule: chaos.Schedule{c.at(t.start(), t.hold(), &chaos.Pause{Node: c.lockNodes()[0]})}}, nil
		},
	},
	{
		ID:          "crash-restart-aof",
		Summary:     "while a worker holds the lock, a majority of the lock nodes is killed (kill -9) and restarted at once; AOF with appendfsync always",
		Persistence: localredis.AOFAlways,
		Expect: func(Mode) Expectation {
			return safe(report.ClaimRestartNeedsPersistence, "the restarted nodes come back with every acknowledged key")
		},
		plan: func(c *cell) (plan, error) {
			return c.holdingPlan(c.holding(c.timing.start(), 0, crashes(c.majority(), true)...)), nil
		},
	},
	{
		ID:      "crash-restart-nopersist",
		Summary: "while a worker holds the lock, a majority of the lock nodes is killed and restarted at once, without persistence: they come back empty",
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
			return c.holdingPlan(c.holding(c.timing.start(), 0, crashes(c.majority(), true)...)), nil
		},
	},
	{
		ID:      "crash-restart-delayed",
		Summary: "while a worker holds the lock, a majority of the lock nodes is killed without persistence and restarted only after the lease time (the max TTL)",
		Expect: func(Mode) Expectation {
			return safe(report.ClaimRestartNeedsPersistence, "every lease granted before the crash has expired when the nodes come back empty")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			return c.holdingPlan(c.holding(t.start(), t.Lease+t.Lease/4, crashes(c.majority(), false)...)), nil
		},
	},
	{
		ID:      "failover",
		Summary: "split brain: the master is cut off from its replica, the replica is promoted; half of the clients keep the old master's address, half follow the new master",
		Applies: func(m Mode) bool { return m.Group },
		Expect: func(m Mode) Expectation {
			if m.Wait {
				return safe(report.ClaimFailoverLosesLocks, "a grant counts only once the replica acknowledged it: the cut-off master cannot grant, the promoted replica has every counted lock and no replica to acknowledge new ones")
			}
			return unsafe(report.ClaimFailoverLosesLocks, "both masters grant the lock during the split")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			g := c.cluster.Groups[0]
			return plan{nodes: splitGroup(g), schedule: chaos.Schedule{c.at(t.start(), t.hold(), &failover{g: g})}}, nil
		},
	},
	{
		ID: "client-pause",
		Summary: "the holder (the first worker to read under the lock once the pause starts) is paused before its write for longer than its lease; " +
			"it writes and releases once another worker holds the lock in a long critical section",
		Expect: func(m Mode) Expectation {
			if m.Fencing {
				return safe(report.ClaimFencingProtects, "the paused write carries an older token than the next holder's and is rejected")
			}
			return unsafe(report.ClaimPauseWithoutFencing, "the paused write lands after the next holder's and is accepted")
		},
		LeasesHold: true,
		plan: func(c *cell) (plan, error) {
			t := c.timing
			h := &handover{paused: &holdGate{}, next: &holdGate{}, wait: t.Duration / 2,
				pause: t.Lease + t.Lease/4, slow: t.Lease * 3 / 4, rec: c.rec}
			gs := map[int]workload.Gate{}
			for w := range t.Workers {
				gs[w] = gates{h.paused.For(w), h.next.For(w)}
			}
			return plan{schedule: chaos.Schedule{{At: t.start(), Fault: h}}, gates: gs}, nil
		},
	},
	{
		ID: "holder-isolated",
		Summary: "leases renewed by a watchdog; the holder is cut off from every lock node while it works " +
			"longer than the lease, then writes: the watchdog cannot renew, the lease is lost, another worker gets the lock",
		LeasesHold: true,
		Expect: func(m Mode) Expectation {
			return unsafe(report.ClaimLeasesNotMutex, "renewal needs the network; the holder learns of the loss only after its work")
		},
		plan: func(c *cell) (plan, error) {
			t := c.timing
			tp := c.cluster.Toxiproxy()
			if tp == nil {
				return plan{}, errors.New("matrix: holder-isolated needs the embedded toxiproxy")
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
			slow := t.Lease + t.Lease*3/4
			wh := c.whileHolding(slow, nil, func(h int) chaos.Fault { return c.faults(cuts[h]...) })
			p := c.holdingPlan(c.holdStep(t.start(), slow+t.Lease/10, wh), wh.gate)
			p.watchdog = true
			p.nodes = func(w int) []*redis.Options { return opts[w] }
			return p, nil
		},
	},
	{
		ID:      "clock-jump",
		Summary: "while a worker holds the lock, one lock node's clock jumps forward by the lease time: its keys expire at once (PTTL rewritten)",
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
			return c.holdingPlan(c.holding(t.start(), 0, clockJump(c.lockNodes()[0], t.Lease))), nil
		},
	},
	{
		ID: "clock-jump-partition",
		Summary: "Kleppmann's example: half of the clients reach nodes A, B, C, the other half C, D, E; " +
			"while a worker holds the lock, C's clock jumps forward (with 3 nodes: A, B and B, C; B jumps)",
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
			return plan{schedule: chaos.Schedule{c.at(t.start(), t.Duration-t.Lease/2-t.start(), e)}}, nil
		},
	},
	{
		ID:          "random",
		Summary:     "a seeded nemesis: one fault at a time (partition, refusal, reply loss, latency, pause, crash-restart with AOF; failover for a group) on a random node",
		Persistence: localredis.AOFAlways,
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
	w := c.whileHolding(t.Lease+t.Lease/4, nil, nil)
	p := c.holdingPlan(c.holdStep(t.Duration/4, 0, w), w.gate)
	p.before, p.driftFactor = before, rateDriftFactor
	return p, nil
}

// clockJump is a forward jump of n's clock by d, emulated on every key
// with a TTL (as a real jump would do to Redis expiry; the nodes hold only
// the lock's keys, whatever names a lock implementation gives them).
func clockJump(n *chaos.Node, d time.Duration) chaos.Fault {
	return &chaos.EmulatedClockSkew{Node: n, Match: "*", Jump: d}
}

// splitGroup puts even workers on the group's first master's address (they
// stay there across a failover) and odd ones on the group's master (they
// follow it).
func splitGroup(g *chaos.Group) func(w int) []*redis.Options {
	first := g.Master()
	return func(w int) []*redis.Options {
		if w%2 == 0 {
			return []*redis.Options{first.Options()}
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
	for _, f := range cuts {
		s = append(s, c.at(0, t.Duration-t.Lease/4, f))
	}
	jump, gate := c.holding(t.Duration/6, 0, clockJump(nodes[q-1], t.Lease))
	p := c.holdingPlan(jump, gate)
	p.schedule = append(s, jump)
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
		faults = append(faults, &failover{g: g}, &failover{g: g}, &chaos.CutLink{Group: g})
		nodes = splitGroup(g)
	}
	for i, f := range faults {
		faults[i] = record(c.rec, f)
	}
	return plan{
		nodes: nodes,
		nemesis: &chaos.Nemesis{Seed: c.seed, Faults: faults,
			Hold: chaos.Range{Min: t.Lease * 2 / 5, Max: t.Lease * 9 / 10},
			Rest: chaos.Range{Min: t.Lease / 5, Max: t.Lease / 2}},
		nemesisFrom: t.Duration / 10,
		nemesisTo:   t.Duration - t.Lease/4,
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
