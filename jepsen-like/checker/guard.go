package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// checkGuardOrder judges the writes made through a fenced store outside
// the lock (history.GuardWrite, the guarded workload). Such a guard is one
// node running one script per write, so its accepted writes are in one
// order. Two kinds of violation are counted:
//
//   - an accepted write whose token is not above a token accepted from
//     another tenure by a write that completed before it was invoked
//     (lower: the guard let a stale holder in; equal: two tenures wrote
//     with one token);
//   - a refused write whose token was not below the last token the guard
//     reports having accepted (the guard refused a holder it had to let
//     in, such as the newest holder).
//
// Unknown when the history has no guard write.
func checkGuardOrder(h history.History, ex examples) Result {
	var acc []history.Op
	seen := false
	r := Result{Verdict: Ok}
	for _, o := range h.Ops {
		if o.Kind != history.GuardWrite {
			continue
		}
		seen = true
		switch o.Outcome {
		case history.Ok:
			if o.Returned() {
				acc = append(acc, o)
			}
		case history.Fail:
			if o.Last <= o.Token {
				ex.add(&r, fmt.Sprintf("guard refused token %d while its last accepted token was %d", o.Token, o.Last), o.ID)
			}
		}
	}
	if !seen {
		return Result{Verdict: Unknown, Note: "no guard writes"}
	}
	// Sweep the accepted writes by invocation, folding in every accepted
	// write that completed before: the highest token so far, the lease
	// that wrote it, and the highest token of any other lease.
	byDone := slices.Clone(acc)
	slices.SortFunc(byDone, func(a, b history.Op) int { return cmp.Compare(a.Complete, b.Complete) })
	slices.SortFunc(acc, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
	var (
		top, second     history.Op // highest token, and highest of a lease other than top's
		haveTop, haveSn bool
		j               int
	)
	for _, o := range acc {
		for ; j < len(byDone) && byDone[j].Complete < o.Invoke; j++ {
			d := byDone[j]
			switch {
			case !haveTop || d.Token > top.Token:
				if haveTop && top.Lease != d.Lease {
					second, haveSn = top, true
				}
				top, haveTop = d, true
			case d.Lease != top.Lease && (!haveSn || d.Token > second.Token):
				second, haveSn = d, true
			}
		}
		prev, ok := top, haveTop
		if ok && prev.Lease == o.Lease {
			prev, ok = second, haveSn
		}
		if ok && o.Token <= prev.Token {
			ex.add(&r, fmt.Sprintf("guard accepted token %d after token %d of another tenure", o.Token, prev.Token), prev.ID, o.ID)
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}
