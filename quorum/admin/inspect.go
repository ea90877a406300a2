package admin

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
	inode "github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/node"
)

// Verdict is what Inspect concludes about a lock from what the nodes say.
type Verdict string

const (
	// HeldByQuorum: one owner (several for a read lock) holds the lock on at
	// least a quorum of nodes. Inspection.Holders says who.
	HeldByQuorum Verdict = "held"
	// MinorityOnly: the lock is present on some nodes, but no owner has a
	// quorum and none could have one even if every silent node held it for
	// them. These are leftovers that block nobody and vanish at their TTL:
	// attempts that failed or timed out (a node resumed after a pause runs the
	// commands queued on its socket, so a timed-out attempt's key reappears),
	// rollbacks that did not reach a node, or an acquisition under way.
	MinorityOnly Verdict = "minority"
	// Free: no answering node has the lock, and the silent nodes are too few
	// to make a quorum.
	Free Verdict = "free"
	// Unknown: too many nodes did not answer to tell; with their votes an
	// owner could hold a quorum.
	Unknown Verdict = "unknown"
)

// NodeState is one node's view of a lock in an Inspection: what it holds
// (node.State: present, owners and hold counts, remaining TTL, fencing
// counter, read/write mode, last force-unlock) or, when it did not answer in
// time, Err.
type NodeState struct {
	Node string
	node.State
	Err error
}

// Answered reports whether the node answered.
func (s NodeState) Answered() bool { return s.Err == nil }

// Inspection is the state of one lock across the client's nodes.
type Inspection struct {
	Name    string
	Verdict Verdict
	// Holders are the owners present on a quorum of nodes, sorted: one for
	// a held lock, several for a read lock shared by readers, none otherwise.
	Holders []string
	// Mode is the read-write mode on the nodes holding it ("read" or
	// "write"), "" for a plain lock.
	Mode string
	// TTL is how long the verdict lasts without renewal: for HeldByQuorum,
	// until fewer than a quorum of nodes still hold it (the quorum-th longest
	// TTL among them); for MinorityOnly, until the last leftover expires;
	// otherwise 0.
	TTL time.Duration
	// Fence is the highest fencing counter among the answering nodes.
	Fence int64
	// Quorum is how many nodes an owner needs (n − the policy's failed
	// locks limit); Answered is how many nodes answered.
	Quorum, Answered int
	// Forced is the latest force-unlock recorded on any node within
	// node.ForcedRecordTTL, nil when none.
	Forced *node.Forced
	// Nodes has one entry per node, in the client's order.
	Nodes []NodeState
}

// inspectNodeTimeout bounds each node's answer to Inspect, and each SCAN step
// and batch of a listing, so a frozen node costs a bounded time.
const inspectNodeTimeout = time.Second

// Inspect reads lock name on every node in parallel and concludes a Verdict.
// Each node gets at most one second (less if ctx ends sooner); a node that
// does not answer has Err set in its NodeState and counts as unknown, never as
// free. Inspect fails only on an empty name.
func (t *Tools) Inspect(ctx context.Context, name string) (Inspection, error) {
	if name == "" {
		return Inspection{}, errors.New("quorumlock: empty lock name")
	}
	ins := t.inspectKnown(ctx, []string{name}, make([]error, len(t.nodes)))
	return ins[0], nil
}

// List finds the locks whose names match the glob pattern ("" or "*" for all;
// "orders/*", "user-?") on every node, with SCAN (never KEYS), merges them by
// name and inspects each (see Inspect), sorted by name. A name present on any
// answering node is listed, also leftovers on a single node (free names
// are not listed: Inspect one to read its force-unlock record). Nodes that fail
// are named in the returned error (each a *NodeError), and the inspections
// still come back, with those nodes' Err set. List holds every matching lock
// in memory at once: for a key space of more than some thousands of
// names, use ListPage.
func (t *Tools) List(ctx context.Context, pattern string) ([]Inspection, error) {
	if len(t.nodes) > maxListNodes {
		return nil, errManyNodes
	}
	errs := make([]error, len(t.nodes))
	locks, _ := t.walk(ctx, pattern, position{}, math.MaxInt, errs)
	return locks, t.nodeErrors(errs)
}

// inspectKnown reads names on every node and concludes per name, in the
// order of names. It does not ask the nodes with an error in errs (their
// NodeState.Err is that error) and fills in the error of each node that
// fails now.
func (t *Tools) inspectKnown(ctx context.Context, names []string, errs []error) []Inspection {
	n := len(t.nodes)
	states := make([][]inode.State, n)
	now := fanout.All(n, func(i int) error {
		if errs[i] != nil {
			return errs[i]
		}
		// A batch of inspectBatch names per second is plenty; scale the
		// deadline for long lists.
		d := inspectNodeTimeout * time.Duration(1+len(names)/1024)
		nctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var err error
		states[i], err = t.nodes[i].InspectMany(nctx, names)
		return err
	})
	copy(errs, now)
	quorum := n - t.cfg.Policy.FailedLocksLimit(n)
	out := make([]Inspection, len(names))
	for j, name := range names {
		ns := make([]NodeState, n)
		for i, nd := range t.nodes {
			ns[i] = NodeState{Node: nd.Name(), Err: errs[i]}
			if errs[i] == nil {
				ns[i].State = publicState(states[i][j])
			}
		}
		out[j] = conclude(name, quorum, ns)
	}
	return out
}

// conclude derives the verdict of one lock from its nodes' states.
func conclude(name string, quorum int, nodes []NodeState) Inspection {
	ins := Inspection{Name: name, Quorum: quorum, Nodes: nodes}
	votes := map[string]int{} // owner -> nodes holding it
	present := 0
	for _, s := range nodes {
		if !s.Answered() {
			continue
		}
		ins.Answered++
		ins.Fence = max(ins.Fence, s.Fence)
		if s.Forced != nil && (ins.Forced == nil || s.Forced.At.After(ins.Forced.At)) {
			ins.Forced = s.Forced
		}
		if !s.Present {
			continue
		}
		present++
		for owner := range s.Holders {
			votes[owner]++
		}
	}
	silent := len(nodes) - ins.Answered
	best := 0
	for owner, v := range votes {
		best = max(best, v)
		if v >= quorum {
			ins.Holders = append(ins.Holders, owner)
		}
	}
	slices.Sort(ins.Holders)
	switch {
	case len(ins.Holders) > 0:
		ins.Verdict = HeldByQuorum
	case best+silent >= quorum:
		// Also a name absent from every answering node when the silent
		// nodes alone make a quorum.
		ins.Verdict = Unknown
	case present > 0:
		ins.Verdict = MinorityOnly
	default:
		ins.Verdict = Free
	}

	var ttls []time.Duration
	modes := map[string]int{}
	for _, s := range nodes {
		if !s.Answered() || !s.Present {
			continue
		}
		switch ins.Verdict {
		case HeldByQuorum:
			if holdsAny(s, ins.Holders) {
				ttls = append(ttls, s.TTL)
				if s.Mode != "" {
					modes[s.Mode]++
				}
			}
		case MinorityOnly:
			ins.TTL = max(ins.TTL, s.TTL)
		}
	}
	if len(ttls) >= quorum {
		slices.Sort(ttls)
		ins.TTL = ttls[len(ttls)-quorum]
	}
	for m, k := range modes {
		if k > modes[ins.Mode] || (k == modes[ins.Mode] && m < ins.Mode) {
			ins.Mode = m
		}
	}
	return ins
}

func holdsAny(s NodeState, owners []string) bool {
	for _, o := range owners {
		if _, ok := s.Holders[o]; ok {
			return true
		}
	}
	return false
}

// publicState is what one node read, as users see it.
func publicState(s inode.State) node.State {
	return node.State{Present: s.Present, Holders: s.Holders, Attempts: s.Attempts, TTL: s.TTL,
		Fence: s.Fence, Mode: s.Mode, Forced: (*node.Forced)(s.Forced), Labels: s.Labels}
}
