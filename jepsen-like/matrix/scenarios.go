package matrix

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"

	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/localredis"
)

// The scenarios are the catalog's; these names keep the matrix's API.
type (
	// Expectation is catalog.Expectation.
	Expectation = catalog.Expectation
	// Scenario is catalog.Scenario; the matrix realises each by its ID
	// (realisations).
	Scenario = catalog.Scenario
	// Pace is catalog.Pace.
	Pace = catalog.Pace
)

// MinPacedLease is the shortest lease a Pace gives.
const MinPacedLease = catalog.MinPacedLease

// CellTiming is the timing cell c runs with under the run's timing t: t
// itself, or t paced by the scenario.
func (c Cell) CellTiming(t RunTiming) RunTiming {
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

// Claims tested besides those of package report (the catalog's).
var (
	ClaimNoFaults         = catalog.ClaimNoFaults
	ClaimStalledAcquire   = catalog.ClaimStalledAcquire
	ClaimAllNodes         = catalog.ClaimAllNodes
	ClaimClockOffset      = catalog.ClaimClockOffset
	ClaimLossSignalled    = catalog.ClaimLossSignalled
	ClaimAbandonedExpires = catalog.ClaimAbandonedExpires
)

// RunTiming is the timing of a matrix run's cells (a scenario may pace
// one: Cell.CellTiming). Scenario schedules are laid out from it.
type RunTiming struct {
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

// Quick is the timing of `quorumlock-lab chaos --quick`.
var Quick = RunTiming{Duration: 3 * time.Second, Lease: time.Second, Workers: 4,
	Work: workload.Range{Min: 2 * time.Millisecond, Max: 10 * time.Millisecond}, MinContested: QuickMinContested}

// Full is the default timing.
var Full = RunTiming{Duration: 8 * time.Second, Lease: 2 * time.Second, Workers: 4,
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
func (t RunTiming) Validate() error {
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
// strike in a cell: each fault event is a new moment to test the lock,
// and a bug that shows once in a few events needs several to be seen.
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
func (t RunTiming) strikeRest() time.Duration { return t.Lease / 4 }

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
func (t RunTiming) start() time.Duration { return t.Duration / 6 }

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

// Scenarios are the catalog's fault scenarios the matrix runs, in report
// order.
var Scenarios = catalog.On(catalog.Matrix)

// realisations build each scenario's faults against a running cell, by
// scenario id: the matrix's reading of the catalog's plans (chaos's
// faults, proxies of its own, gates that catch a holder).
var realisations = map[string]func(*cell) (plan, error){
	"lost-wakeups": func(c *cell) (plan, error) {
		t := c.timing
		u := &unlockLoss{}
		g := &holdGate{}
		p := c.holdingSeries(g, func(i int) (chaos.Fault, time.Duration) {
			f := &lossFault{u: u}
			if i%2 == 1 {
				f.late = 300 * time.Millisecond
			}
			return c.holdingStrike(g, t.Lease/5, t.Lease/5+t.Lease/2, f)
		})
		p.hooks = u.hook
		return p, nil
	},
	"baseline": func(*cell) (plan, error) { return plan{}, nil },
	"herd":     func(*cell) (plan, error) { return plan{}, nil },
	"partition-minority": func(c *cell) (plan, error) {
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
	"partition-majority": func(c *cell) (plan, error) {
		nodes := c.lockNodes()
		var cuts []chaos.Fault
		for _, n := range nodes[:len(nodes)/2+1] {
			cuts = append(cuts, &chaos.Partition{Proxy: n.Proxy()})
		}
		return plan{schedule: chaos.Schedule{c.repeated(cuts...)}}, nil
	},
	"partition-all": func(c *cell) (plan, error) {
		t := c.timing
		return plan{schedule: chaos.Schedule{c.strikes(t.Lease/2, func(int) (chaos.Fault, time.Duration) {
			var cuts []chaos.Fault
			for _, n := range c.lockNodes() {
				cuts = append(cuts, &chaos.Partition{Proxy: n.Proxy()})
			}
			return c.faults(cuts...), t.Lease + t.Lease/2
		})}}, nil
	},
	"latency": func(c *cell) (plan, error) {
		var slow []chaos.Fault
		for _, n := range c.lockNodes() {
			slow = append(slow, &chaos.Latency{Proxy: n.Proxy(), Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond})
		}
		return plan{schedule: chaos.Schedule{c.repeated(slow...)}}, nil
	},
	"slow-acquire": func(c *cell) (plan, error) {
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
	"clock-rate-fast":   func(c *cell) (plan, error) { return clockRatePlan(c, 1.05) },
	"clock-rate-beyond": func(c *cell) (plan, error) { return clockRatePlan(c, 1.25) },
	"node-pause": func(c *cell) (plan, error) {
		t := c.timing
		return plan{schedule: chaos.Schedule{c.strikes(t.Lease/2, func(int) (chaos.Fault, time.Duration) {
			return record(c.rec, &chaos.Pause{Node: c.lockNodes()[0]}), t.Lease + t.Lease/4
		})}}, nil
	},
	"crash-restart-aof": func(c *cell) (plan, error) {
		g := &holdGate{}
		return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
			return c.holdingStrike(g, c.timing.Lease*3/4, 0, crashes(c.majority(), true)...)
		}), nil
	},
	"crash-restart-nopersist": func(c *cell) (plan, error) {
		g := &holdGate{}
		return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
			return c.holdingStrike(g, c.timing.Lease*3/4, 0, crashes(c.majority(), true)...)
		}), nil
	},
	"crash-restart-minority": crashMinorityPlan,
	"crash-restart-delayed": func(c *cell) (plan, error) {
		t := c.timing
		g := &holdGate{}
		return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
			return c.holdingStrike(g, t.Lease*3/4, t.Lease+t.Lease/4, crashes(c.majority(), false)...)
		}), nil
	},
	"failover": func(c *cell) (plan, error) {
		t := c.timing
		g := c.cluster.Groups[0]
		pn := &pin{n: g.Master()}
		return plan{nodes: splitGroup(g, pn), schedule: chaos.Schedule{c.strikes(t.strikeRest(), func(int) (chaos.Fault, time.Duration) {
			return record(c.rec, &failover{g: g, pin: pn}), t.Lease
		})}}, nil
	},
	"client-pause": func(c *cell) (plan, error) {
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
	"clock-offset":    clockOffsetPlan,
	"holder-isolated": holderCutPlan,
	"renewal-hang":    holderCutPlan,
	"clock-jump": func(c *cell) (plan, error) {
		t := c.timing
		g := &holdGate{}
		return c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
			return c.holdingStrike(g, t.Lease*3/4, 0, clockJump(c.lockNodes()[0], t.Lease))
		}), nil
	},
	"clock-jump-partition": kleppmann,
	"expiry-race": func(c *cell) (plan, error) {
		t := c.timing
		e := &expiryRace{c: c}
		// The race's span is the setting; each contender fired in a
		// key's last millisecond is a fault event of its own.
		return plan{schedule: chaos.Schedule{c.at(t.start(), t.Duration-t.Lease/2-t.start(), e)}, settings: []string{e.String()}}, nil
	},
	"random": randomPlan,
}

// holderCutPlan gives every worker proxies of its own in front of the
// nodes and, again and again, cuts the holder alone off from every node
// (packets held, no reset) while it works 2½ leases (renewal-hang, whose
// lease is not shortened: 1¾), its lease renewed by a watchdog
// (holder-isolated, renewal-hang).
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
			// An election's leader is cut off loudly (its connections
			// refused): a silent cut makes each of its Proclaims wait the
			// attempt timeout, which outlasts the short lease, so no
			// Proclaim could return while its term still holds and
			// followers read it — the span a Proclaim that reports
			// success without a quorum shows in.
			loud := c.sc.ID == "holder-isolated" && c.kind == workload.Election
			cuts[w] = append(cuts[w], &chaos.Partition{Proxy: px, Loud: loud})
		}
	}
	// The holder works 2½ leases: its keys expire about one lease
	// after the cut, another worker takes over, and the holder
	// goes on untold for over a lease more — well past the
	// checker's signal grace (200 ms), so a lock that never
	// signals the loss is caught. (1¾ leases leave an untold span
	// near the grace in quick cells, too short to catch the
	// silent-watchdog mutant every time.)
	slow := t.Lease * 5 / 2
	if c.sc.ID == "renewal-hang" {
		// Its lease is not shortened: 1¾ leases leave the holder at work
		// about ¾ of a lease (750 ms in quick cells) after the takeover.
		slow = t.Lease * 7 / 4
	}
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
	return catalog.FindScenario(scenarios, id)
}

// SelectScenarios returns the scenarios named in a comma-separated list
// ("" or "all": every scenario), in the list's order.
func SelectScenarios(all []Scenario, list string) ([]Scenario, error) {
	return catalog.SelectScenarios(all, list)
}
