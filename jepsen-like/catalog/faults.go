package catalog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// FaultKind is what a Fault does.
type FaultKind string

// The kinds of fault. Node faults name lock nodes by index (Nodes);
// worker faults name a worker (Worker) or, with Held, strike the first
// worker to pass its critical-section check after At (the holder).
const (
	Partition  FaultKind = "partition"    // Nodes cut off from every worker, both ways
	ReplyLoss  FaultKind = "reply-loss"   // Nodes' replies to every worker dropped
	Latency    FaultKind = "latency"      // Nodes answer D ± D/2 late each way
	PauseNode  FaultKind = "pause"        // Nodes frozen (SIGSTOP), then resumed
	Crash      FaultKind = "crash"        // Nodes killed; restarted after Hold; data kept with Persist
	ClockJump  FaultKind = "clock-jump"   // Nodes' clocks jump forward by D
	ClockRate  FaultKind = "clock-rate"   // Nodes' clocks run at Rate
	CutLink    FaultKind = "cut-link"     // the group's replication link is cut
	Failover   FaultKind = "failover"     // the group's replica is promoted (split brain until Hold ends)
	ClientHold FaultKind = "hold"         // the holder stays in its critical section for D (not a fault)
	ClientStop FaultKind = "client-pause" // the holder is paused for D before its write
	Isolate    FaultKind = "isolate"      // the holder is cut off from every node for D (Held)
	Stall      FaultKind = "stall"        // the next worker to receive a grant is stalled D before using it
	ExpiryRace FaultKind = "expiry-race"  // a lock abandoned by a crashed holder is contended in its last millisecond
	SplitSides FaultKind = "split-sides"  // Kleppmann's split: even workers reach the first majority of the nodes, odd ones the last
	UnlockLoss FaultKind = "unlock-loss"  // Nodes' unlock (pub/sub) messages to every worker dropped (Late = 0) or delayed by Late; connections stay up
)

// Fault is one fault of a schedule, a plain value: a run is its seed plus
// its list of faults, and shrinking removes faults from the list.
type Fault struct {
	Kind    FaultKind
	At      time.Duration // from the workers' start
	Hold    time.Duration // how long it lasts (0: an instant, or healed at once)
	Nodes   []int         // lock node indices
	Worker  int
	Held    bool // strike the holder: wait (from At) for a worker in its critical section
	D       time.Duration
	Rate    float64
	Persist bool
	// Late: unlock-loss — how late each unlock message arrives (0: lost).
	Late time.Duration `json:",omitempty"`
	// Roll: crash — a rolling restart: Nodes are struck in turn, in
	// groups of a minority ((n−1)/2) of the lock nodes, Roll apart (0:
	// all at once).
	Roll time.Duration `json:",omitempty"`
}

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", f.Kind)
	if len(f.Nodes) > 0 {
		fmt.Fprintf(&b, " nodes%v", f.Nodes)
	}
	if f.Held {
		b.WriteString(" holder")
	}
	if f.D > 0 {
		fmt.Fprintf(&b, " d=%v", f.D)
	}
	if f.Late > 0 {
		fmt.Fprintf(&b, " late=%v", f.Late)
	}
	if f.Roll > 0 {
		fmt.Fprintf(&b, " rolling every %v", f.Roll)
	}
	if f.Rate != 0 {
		fmt.Fprintf(&b, " x%.2f", f.Rate)
	}
	if f.Kind == Crash {
		if f.Persist {
			b.WriteString(" aof")
		} else {
			b.WriteString(" empty")
		}
	}
	fmt.Fprintf(&b, " at %v for %v", f.At, f.Hold)
	return b.String()
}

// Timing is the shape of a run a plan lays its faults out in.
type Timing struct {
	Workers  int
	Lease    time.Duration
	Duration time.Duration
}

// Plan builds a scenario's fault list for mode from rng: the abstract
// plan every runner maps to its own faults.
type Plan func(m Mode, t Timing, rng *rand.Rand) []Fault

func lockNodes(m Mode) int { return m.Nodes() }

func minorityOf(n int) []int {
	var out []int
	for i := range (n - 1) / 2 {
		out = append(out, i)
	}
	return out
}

// RollGroups splits f's nodes into the groups its rolling restart strikes
// in turn: a minority of the n lock nodes each, one node at least (one
// group when f does not roll).
func (f Fault) RollGroups(n int) [][]int {
	if f.Roll <= 0 {
		return [][]int{f.Nodes}
	}
	size := max((n-1)/2, 1)
	var out [][]int
	for nodes := f.Nodes; len(nodes) > 0; {
		k := min(size, len(nodes))
		out = append(out, nodes[:k])
		nodes = nodes[k:]
	}
	return out
}

func majorityOf(n int) []int {
	var out []int
	for i := range n/2 + 1 {
		out = append(out, i)
	}
	return out
}

func allOf(n int) []int {
	var out []int
	for i := range n {
		out = append(out, i)
	}
	return out
}

// repeated is k windows of f spread over the run at random.
func repeated(t Timing, rng *rand.Rand, k int, f Fault) []Fault {
	var out []Fault
	slot := (t.Duration - t.Lease) / time.Duration(k)
	for i := range k {
		g := f
		g.Nodes = append([]int(nil), f.Nodes...)
		g.At = t.Lease/2 + time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot/2)))
		g.Hold = slot/4 + time.Duration(rng.Int64N(int64(slot/4)))
		out = append(out, g)
	}
	return out
}

// kleppmannPlan is the matrix's clock-jump-partition: for the whole run the
// even workers reach nodes [0, q) and the odd ones [n−q, n) (q a majority
// of n; the sides share node q−1), and the shared node's clock jumps one
// lease forward while a worker holds the lock, again and again.
func kleppmannPlan(m Mode, t Timing, rng *rand.Rand) []Fault {
	q := lockNodes(m)/2 + 1
	out := []Fault{{Kind: SplitSides, At: 0, Hold: t.Duration}}
	for _, f := range repeated(t, rng, 4, Fault{Kind: ClockJump, Held: true, Nodes: []int{q - 1}, D: t.Lease}) {
		f.Hold = t.Lease * 3 / 4
		out = append(out, f)
	}
	return out
}

func crashPlan(persist bool) Plan {
	return func(m Mode, t Timing, rng *rand.Rand) []Fault {
		at := t.Lease/2 + time.Duration(rng.Int64N(int64(t.Duration/2)))
		return []Fault{{Kind: Crash, Held: true, Nodes: majorityOf(lockNodes(m)), Persist: persist, At: at, D: t.Lease / 2}}
	}
}

// clockRatePlan runs a majority of the nodes at rate for the whole run and
// makes a holder stay past its lease, so that the others take over as soon
// as the fast nodes let them (the lock's drift factor is the matrix's 0.1).
func clockRatePlan(rate float64) Plan {
	return func(m Mode, t Timing, rng *rand.Rand) []Fault {
		at := t.Duration/4 + time.Duration(rng.Int64N(int64(t.Duration/4)))
		return []Fault{
			{Kind: ClockRate, Nodes: majorityOf(lockNodes(m)), Rate: rate, At: 0, Hold: t.Duration},
			{Kind: ClientHold, Held: true, At: at, D: t.Lease + t.Lease/4},
		}
	}
}

// randomPlan is the matrix's random nemesis: one fault at a time on a
// random node, of the kinds every mode but failover claims to survive.
func randomPlan(m Mode, t Timing, rng *rand.Rand) []Fault {
	n := lockNodes(m)
	kinds := []FaultKind{Partition, ReplyLoss, Latency, PauseNode, Crash}
	var out []Fault
	at := t.Duration / 10
	for at < t.Duration-t.Lease/4 {
		hold := t.Lease*2/5 + time.Duration(rng.Int64N(int64(t.Lease/2)))
		k := kinds[rng.IntN(len(kinds))]
		if m.Group && rng.IntN(3) == 0 {
			k = []FaultKind{Failover, CutLink}[rng.IntN(2)]
		}
		f := Fault{Kind: k, At: at, Hold: hold, Nodes: []int{rng.IntN(n)}, Persist: true}
		switch k {
		case Latency:
			f.D = 30 * time.Millisecond
		case Crash:
			f.Hold = 0
		case Failover, CutLink:
			f.Nodes = nil
		}
		out = append(out, f)
		at += hold + t.Lease/5 + time.Duration(rng.Int64N(int64(t.Lease*3/10)))
	}
	return out
}

// minorityPlan: the redlock-5 soak's faults, every fault on a minority of
// the nodes (at most (n−1)/2 at a time), all kinds a majority lock claims
// to survive, overlapping.
func minorityPlan(m Mode, t Timing, rng *rand.Rand) []Fault {
	n := lockNodes(m)
	kinds := []FaultKind{Partition, ReplyLoss, Latency, PauseNode, Crash}
	var out []Fault
	min := minorityOf(n)
	at := t.Lease / 4
	for at < t.Duration-t.Lease/4 {
		hold := t.Lease/5 + time.Duration(rng.Int64N(int64(t.Lease)))
		perm := rng.Perm(n)[:len(min)]
		k := kinds[rng.IntN(len(kinds))]
		f := Fault{Kind: k, At: at, Hold: hold, Nodes: perm, Persist: true}
		if k == Latency {
			f.D = 30 * time.Millisecond
		}
		out = append(out, f)
		at += hold + time.Duration(rng.Int64N(int64(t.Lease/5)))
	}
	return out
}

// lostWakeupsPlan: ten windows over the run, alternately dropping every
// unlock message of every node and delaying each by 300 ms (longer than
// the wakeup bound, so a waiter that waits for it is late). Each window
// starts when a worker holds the lock, keeps it a fifth of its lease in
// its critical section (the others come to wait meanwhile) and lasts half
// a lease past its release.
func lostWakeupsPlan(m Mode, t Timing, rng *rand.Rand) []Fault {
	var out []Fault
	for i, f := range repeated(t, rng, 10, Fault{Kind: UnlockLoss, Nodes: allOf(m.Nodes()), Held: true, D: t.Lease / 5}) {
		if i%2 == 1 {
			f.Late = 300 * time.Millisecond
		}
		f.Hold = f.D + t.Lease/2
		out = append(out, f)
	}
	return out
}
