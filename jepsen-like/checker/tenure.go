package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// Tenure is one worker's holding of the lock, as the worker saw it: from the
// completion of an Ok acquire (Start) to the invocation of its release
// (End).
type Tenure struct {
	Worker int
	Lease  history.OpID // the Ok acquire
	Token  uint64
	Start  time.Duration
	End    time.Duration
	// Released is false when no release was recorded: the tenure then ends
	// where the same worker invoked its next acquire, or at the history's
	// end.
	Released bool
	// ValidUntil is the lease's validity deadline: the largest of the
	// acquire's and of the Ok extends completed within the tenure (0 = the
	// lock reported none).
	ValidUntil time.Duration
	// Signalled is when the holder saw its lease signal that it ended
	// (the first Signal op of the lease; 0 = not before its release).
	Signalled time.Duration
	// Locks are the names the lease held (nil: the run's one lock) and
	// Shared whether it was a read hold; Role is the acquire's role.
	Locks  []string
	Shared bool
	Role   string
}

// Excludes reports whether t and u may not be held at once: they hold a
// common name (nil Locks stands for the run's one lock) and at least one of
// them is exclusive.
func (t Tenure) Excludes(u Tenure) bool {
	if t.Shared && u.Shared {
		return false
	}
	if t.Locks == nil || u.Locks == nil {
		return true
	}
	for _, n := range t.Locks {
		if slices.Contains(u.Locks, n) {
			return true
		}
	}
	return false
}

// ValidEnd is where the lease's validity ended inside the tenure:
// min(End, ValidUntil), or End when no deadline is known. It is ≤ Start when
// the lease was already invalid when the acquire returned.
func (t Tenure) ValidEnd() time.Duration {
	if t.ValidUntil == 0 {
		return t.End
	}
	return min(t.End, t.ValidUntil)
}

func (t Tenure) String() string {
	return fmt.Sprintf("worker %d lease #%d [%v, %v)", t.Worker, t.Lease, t.Start, t.End)
}

// Tenures derives the tenures of h, sorted by Start (then lease id).
//
// A release is matched to its Lease; a release without one to the worker's
// latest unreleased Ok acquire completed before it. A second release of the
// same lease is ignored. A worker holds one lease at a time, so a tenure
// with no release ends when the same worker invokes its next acquire (it has
// evidently stopped using the old lease) or at the history's end.
func Tenures(h history.History) []Tenure {
	ix := newIndex(h)
	return ix.tenures
}

// Overlap is two tenures of different workers that overlap in time.
type Overlap struct {
	A, B     Tenure        // A.Start ≤ B.Start
	From, To time.Duration // the overlapping interval
}

// Overlaps returns every pair of tenures of different workers that exclude
// each other (Tenure.Excludes) and whose intervals [Start, End) intersect. With valid set it uses [Start,
// ValidEnd()) instead: overlaps of leases that were both still valid, which
// a correct lock never allows whatever its clients do. Touching intervals
// (one ends where the other starts) do not overlap. tenures must be sorted
// by Start, as Tenures returns them.
func Overlaps(tenures []Tenure, valid bool) []Overlap {
	end := func(t Tenure) time.Duration {
		if valid {
			return t.ValidEnd()
		}
		return t.End
	}
	var out []Overlap
	var active []Tenure
	for _, t := range tenures {
		if end(t) <= t.Start {
			continue // empty interval
		}
		// Drop tenures that ended before t starts.
		active = slices.DeleteFunc(active, func(a Tenure) bool { return end(a) <= t.Start })
		for _, a := range active {
			if a.Worker != t.Worker && a.Excludes(t) {
				out = append(out, Overlap{A: a, B: t, From: t.Start, To: min(end(a), end(t))})
			}
		}
		active = append(active, t)
	}
	return out
}

// Window is a fault injected by the nemesis: from the invoke of its start
// event to the completion of the matching end event (the widest reading).
type Window struct {
	Name       string
	Start, End time.Duration
	// Healed is false when no end event was recorded: End is then the
	// history's end.
	Healed  bool
	StartOp history.OpID
	EndOp   history.OpID
}

// Windows pairs nemesis start and end events by name, in invoke order.
// Overlapping faults of the same name nest first-in first-out.
func Windows(h history.History) []Window {
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
	open := map[string][]int{} // name → indexes into out
	var out []Window
	for _, o := range ops {
		switch o.Kind {
		case history.NemesisStart:
			open[o.Name] = append(open[o.Name], len(out))
			out = append(out, Window{Name: o.Name, Start: o.Invoke, StartOp: o.ID})
		case history.NemesisEnd:
			q := open[o.Name]
			if len(q) == 0 {
				continue // an end without a start: nothing to shade
			}
			w := &out[q[0]]
			open[o.Name] = q[1:]
			w.End, w.EndOp, w.Healed = o.Complete, o.ID, true
			if !o.Returned() {
				w.End = o.Invoke
			}
		}
	}
	hEnd := h.End()
	for i := range out {
		if !out[i].Healed {
			out[i].End = hEnd
		}
	}
	return out
}

// index holds what several checks need: tenures and the lease of each op.
type index struct {
	h        history.History
	tenures  []Tenure
	byLease  map[history.OpID]int // lease → index in tenures
	acquires map[int][]history.Op // worker → Ok acquires by Complete
}

func newIndex(h history.History) *index {
	ix := &index{h: h, byLease: map[history.OpID]int{}, acquires: map[int][]history.Op{}}
	nextInvoke := map[history.OpID]time.Duration{} // lease → the worker's next acquire invoke
	byWorker := map[int][]history.Op{}             // all acquires per worker, by Invoke
	for _, o := range h.Ops {
		if o.Kind != history.Acquire {
			continue
		}
		byWorker[o.Worker] = append(byWorker[o.Worker], o)
		if o.Outcome == history.Ok && o.Returned() {
			ix.acquires[o.Worker] = append(ix.acquires[o.Worker], o)
		}
	}
	for _, as := range byWorker {
		slices.SortStableFunc(as, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
		for i, a := range as {
			if i+1 < len(as) && a.Outcome == history.Ok {
				nextInvoke[a.ID] = as[i+1].Invoke
			}
		}
	}
	for _, as := range ix.acquires {
		slices.SortStableFunc(as, func(a, b history.Op) int { return cmp.Compare(a.Complete, b.Complete) })
	}

	hEnd := h.End()
	for _, as := range ix.acquires {
		for _, a := range as {
			end := hEnd
			if n, ok := nextInvoke[a.ID]; ok {
				end = n
			}
			ix.tenures = append(ix.tenures, Tenure{
				Worker: a.Worker, Lease: a.ID, Token: a.Token,
				Start: a.Complete, End: max(end, a.Complete), ValidUntil: a.ValidUntil,
				Locks: a.Locks, Shared: a.Shared, Role: a.Role,
			})
		}
	}
	slices.SortFunc(ix.tenures, func(a, b Tenure) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Lease, b.Lease))
	})
	for i, t := range ix.tenures {
		ix.byLease[t.Lease] = i
	}

	// Releases end tenures; extends push their deadline. Walk in invoke
	// order so that "the latest unreleased acquire" is well defined.
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
	for _, o := range ops {
		switch o.Kind {
		case history.Release:
			i, ok := ix.tenureOf(o, true)
			if !ok || ix.tenures[i].Released {
				continue
			}
			t := &ix.tenures[i]
			t.Released = true
			t.End = max(o.Invoke, t.Start)
		}
	}
	for _, o := range ops {
		if o.Kind == history.Signal && o.Lease != 0 {
			if i, ok := ix.byLease[o.Lease]; ok && ix.tenures[i].Signalled == 0 {
				ix.tenures[i].Signalled = max(o.Invoke, 1)
			}
			continue
		}
		if o.Kind != history.Extend || o.Outcome != history.Ok || !o.Returned() {
			continue
		}
		i, ok := ix.tenureOf(o, false)
		if !ok {
			continue
		}
		t := &ix.tenures[i]
		if o.Complete <= t.End {
			t.ValidUntil = max(t.ValidUntil, o.ValidUntil)
		}
	}
	return ix
}

// tenureOf finds the tenure o belongs to: by o.Lease, else the worker's
// latest Ok acquire completed before o was invoked (skipping released
// tenures when unreleased is set).
func (ix *index) tenureOf(o history.Op, unreleased bool) (int, bool) {
	if o.Lease != 0 {
		i, ok := ix.byLease[o.Lease]
		return i, ok
	}
	as := ix.acquires[o.Worker]
	for k := len(as) - 1; k >= 0; k-- {
		if as[k].Complete > o.Invoke {
			continue
		}
		i := ix.byLease[as[k].ID]
		if unreleased && ix.tenures[i].Released {
			continue
		}
		return i, true
	}
	return 0, false
}

// holder is the key that tells writers apart for the stale-write and
// lost-update checks: the lease when known, else the worker.
type holder struct {
	lease  history.OpID
	worker int
}

func (ix *index) holderOf(o history.Op) (holder, *Tenure) {
	if i, ok := ix.tenureOf(o, false); ok {
		t := &ix.tenures[i]
		return holder{lease: t.Lease, worker: t.Worker}, t
	}
	return holder{worker: o.Worker}, nil
}
