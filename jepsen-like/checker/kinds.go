package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// The roles an acquire can play (history.Op.Role), set by the workloads of
// the lock kinds whose promise goes beyond exclusion.
const (
	// RoleWriter: the exclusive side of a read-write lock (readers are
	// shared acquires without a role).
	RoleWriter = "writer"
	// RoleFair: a waiter of a fair lock.
	RoleFair = "fair"
)

// checkSignalFirst judges renewed leases: each tenure cut at its loss
// signal, [Start, min(End, Signalled − grace)), must overlap no tenure of
// another worker that excludes it: the signal may come at most grace (a
// timer's delay) after the takeover. See
// Report.SignalFirst.
func checkSignalFirst(ix *index, grace time.Duration, ex examples) Result {
	if ix.h.Meta["signals"] != "done" {
		return Result{Verdict: Unknown, Note: "the leases do not signal their end"}
	}
	r := Result{Verdict: Ok}
	cut := make([]Tenure, len(ix.tenures))
	for i, t := range ix.tenures {
		if t.Signalled != 0 && t.Signalled < t.End {
			t.End = max(t.Signalled-grace, t.Start)
		}
		cut[i] = t
	}
	for _, o := range Overlaps(cut, false) {
		ex.add(&r, fmt.Sprintf("worker %d (lease #%d, from %v) was not told its lease ended before worker %d (lease #%d) took the lock at %v",
			o.A.Worker, o.A.Lease, o.A.Start, o.B.Worker, o.B.Lease, o.B.Start), o.A.Lease, o.B.Lease)
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

// faultFree reports whether no fault window (the harness's held critical
// sections aside) meets [from, to].
func faultFree(ws []Window, from, to time.Duration) bool {
	return !slices.ContainsFunc(ws, func(w Window) bool {
		return w.Name != HeldSection && w.Start <= to && from <= w.End
	})
}

// checkWriterProgress judges a read-write lock's writers (the lock promises
// no writer preference: readers that keep it shared throughout may hold a
// writer off). With no fault in effect at any time during them, a count is
//   - a writer's Lock (bounded by the workload's acquire timeout) that did
//     not obtain the lock although it stood free — no other worker's
//     tenure — for at least bound at some stretch of the wait (the writer
//     was not woken, or was refused a free lock);
//   - two successive failed Locks of one writer with no writer granted
//     from the first's invoke to the second's completion (writers starved
//     as a group for two acquire timeouts).
//
// See Report.WriterProgress.
func checkWriterProgress(h history.History, ix *index, bound time.Duration, ex examples) Result {
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no wakeup bound given"}
	}
	ws := Windows(h)
	r := Result{Verdict: Ok}
	hEnd := h.End()
	var granted []time.Duration        // writers' grants
	byWorker := map[int][]history.Op{} // writers' Lock calls, by Invoke
	for _, o := range h.Ops {
		if o.Kind != history.Acquire || o.Role != RoleWriter {
			continue
		}
		byWorker[o.Worker] = append(byWorker[o.Worker], o)
		if o.Outcome == history.Ok && o.Returned() {
			granted = append(granted, o.Complete)
		}
	}
	if len(byWorker) == 0 {
		return Result{Verdict: Unknown, Note: "no writer acquisitions"}
	}
	slices.Sort(granted)
	for _, w := range slices.Sorted(maps.Keys(byWorker)) {
		ops := byWorker[w]
		slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
		for i, o := range ops {
			if o.Outcome == history.Ok {
				continue
			}
			to := o.Complete
			if !o.Returned() {
				to = hEnd
			}
			if !faultFree(ws, o.Invoke, to) {
				continue
			}
			if at, free := longestFree(ix.tenures, o.Worker, o.Invoke, to); free >= bound {
				ex.add(&r, fmt.Sprintf("writer %d waited %v from %v without obtaining the lock (%s), with no fault in effect, though the lock stood free for %v from %v (bound %v)",
					o.Worker, to-o.Invoke, o.Invoke, o.Outcome, free, at, bound), o.ID)
				continue
			}
			if i+1 == len(ops) {
				continue
			}
			next := ops[i+1]
			if next.Outcome == history.Ok || !o.Returned() || !next.Returned() || !faultFree(ws, o.Invoke, next.Complete) {
				continue
			}
			if j, _ := slices.BinarySearch(granted, o.Invoke); j == len(granted) || granted[j] > next.Complete {
				ex.add(&r, fmt.Sprintf("writer %d failed twice from %v to %v, with no fault in effect, and no writer obtained the lock meanwhile",
					o.Worker, o.Invoke, next.Complete), o.ID, next.ID)
			}
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

// longestFree is the longest stretch of [from, to) that no tenure of a
// worker other than w covers, and where it began. ts is sorted by Start.
func longestFree(ts []Tenure, w int, from, to time.Duration) (at, free time.Duration) {
	cur := from
	for _, t := range ts {
		if t.Start >= to {
			break
		}
		if t.Worker == w || t.End <= cur {
			continue
		}
		if t.Start > cur && t.Start-cur > free {
			at, free = cur, t.Start-cur
		}
		cur = max(cur, t.End)
	}
	if to > cur && to-cur > free {
		at, free = cur, to-cur
	}
	return at, free
}

// checkFairOrder judges a fair lock's grants. A waiter A is queued ahead of
// a waiter B of another worker when A's Lock was invoked at least slack
// before B's (slack covers the time a waiter takes to reach the queue on
// the nodes). A grant out of order: B's Lock returned Ok before A's
// returned (A was still waiting, whatever became of it), A was queued ahead
// of B, and no fault was in effect from A's invoke to B's grant (faults may
// drop a queue entry legitimately). See Report.FairOrder.
func checkFairOrder(h history.History, slack time.Duration, ex examples) Result {
	ws := Windows(h)
	var fair []history.Op
	for _, o := range h.Ops {
		if o.Kind == history.Acquire && o.Role == RoleFair {
			fair = append(fair, o)
		}
	}
	if len(fair) == 0 {
		return Result{Verdict: Unknown, Note: "no fair acquisitions"}
	}
	slices.SortStableFunc(fair, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
	hEnd := h.End()
	r := Result{Verdict: Ok}
	for i, a := range fair {
		aEnd := a.Complete
		if !a.Returned() {
			aEnd = hEnd
		}
		for _, b := range fair[i+1:] {
			if b.Invoke > aEnd {
				break // A no longer waited when B arrived
			}
			if b.Worker == a.Worker || b.Invoke-a.Invoke < slack || b.Outcome != history.Ok || !b.Returned() {
				continue
			}
			if b.Complete < aEnd && faultFree(ws, a.Invoke, b.Complete) {
				ex.add(&r, fmt.Sprintf("worker %d (queued %v earlier) still waited when worker %d was granted at %v",
					a.Worker, b.Invoke-a.Invoke, b.Worker, b.Complete), a.ID, b.ID)
			}
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

// checkAllOrNone judges locks over several names: two tenures of different
// workers that share a name and overlap, one of them over several names,
// mean that grant did not hold all of its names (per-name exclusion seen
// from the lock that claims a set). See Report.AllOrNone.
func checkAllOrNone(ix *index, ex examples) Result {
	sets := 0
	for _, t := range ix.tenures {
		if len(t.Locks) > 1 {
			sets++
		}
	}
	if sets == 0 {
		return Result{Verdict: Unknown, Note: "no tenure holds several names"}
	}
	r := Result{Verdict: Ok}
	for _, o := range Overlaps(ix.tenures, false) {
		a, b := o.A, o.B
		if len(a.Locks) < 2 {
			a, b = b, a
		}
		if len(a.Locks) < 2 {
			continue
		}
		var shared []string
		for _, n := range a.Locks {
			if slices.Contains(b.Locks, n) {
				shared = append(shared, n)
			}
		}
		ex.add(&r, fmt.Sprintf("worker %d held %v (lease #%d) while worker %d held %v (lease #%d) from %v: the grant of %v did not hold %v",
			a.Worker, a.Locks, a.Lease, b.Worker, b.Locks, b.Lease, o.From, a.Locks, shared), a.Lease, b.Lease)
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

// checkFairProgress judges a fair lock's line: the times some fair waiter
// waited (Lock calls pending; gaps up to slack between them, a worker's
// next call, count as waiting) are cut at every fair grant; a piece longer
// than bound with no fault in effect is a line that did not move, as
// behind a dead waiter whose entry never lapses. See Report.FairProgress.
func checkFairProgress(h history.History, slack, bound time.Duration, ex examples) Result {
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no fair bound given"}
	}
	type span struct{ from, to time.Duration }
	var waits []span
	var grants []time.Duration
	hEnd := h.End()
	for _, o := range h.Ops {
		if o.Kind != history.Acquire || o.Role != RoleFair {
			continue
		}
		to := o.Complete
		if !o.Returned() {
			to = hEnd
		}
		waits = append(waits, span{o.Invoke, to})
		if o.Outcome == history.Ok && o.Returned() {
			grants = append(grants, o.Complete)
		}
	}
	if len(waits) == 0 {
		return Result{Verdict: Unknown, Note: "no fair acquisitions"}
	}
	slices.SortFunc(waits, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	slices.Sort(grants)
	var merged []span
	for _, w := range waits {
		if n := len(merged); n > 0 && w.from <= merged[n-1].to+slack {
			merged[n-1].to = max(merged[n-1].to, w.to)
			continue
		}
		merged = append(merged, w)
	}
	ws := Windows(h)
	r := Result{Verdict: Ok}
	for _, m := range merged {
		from := m.from
		i, _ := slices.BinarySearch(grants, from)
		for ; ; i++ {
			to := m.to
			if i < len(grants) && grants[i] < m.to {
				to = grants[i]
			}
			if to-from > bound && faultFree(ws, from, to) {
				ex.add(&r, fmt.Sprintf("fair waiters waited %v from %v with no grant, no fault in effect (bound %v)", to-from, from, bound))
			}
			if to == m.to {
				break
			}
			from = to
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}
