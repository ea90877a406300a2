package checker

import (
	"cmp"
	"fmt"
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

// checkWriterProgress judges a read-write lock's writers: a writer's Lock
// (bounded by the workload's acquire timeout) that did not obtain the lock
// although no fault was in effect at any time during it. See
// Report.WriterProgress.
func checkWriterProgress(h history.History, ex examples) Result {
	ws := Windows(h)
	r := Result{Verdict: Ok}
	writers := 0
	hEnd := h.End()
	for _, o := range h.Ops {
		if o.Kind != history.Acquire || o.Role != RoleWriter {
			continue
		}
		writers++
		if o.Outcome == history.Ok {
			continue
		}
		to := o.Complete
		if !o.Returned() {
			to = hEnd
		}
		if faultFree(ws, o.Invoke, to) {
			ex.add(&r, fmt.Sprintf("writer %d waited %v from %v without obtaining the lock (%s), with no fault in effect",
				o.Worker, to-o.Invoke, o.Invoke, o.Outcome), o.ID)
		}
	}
	if writers == 0 {
		return Result{Verdict: Unknown, Note: "no writer acquisitions"}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
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
