package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// WakeupBound is the longest a quorum lock's waiter may leave a free lock
// untaken when it hears no unlock message: a waiter that missed one
// retries after jitter(retry interval), at most 1.2 × the interval
// (quorum/mutex.go: the retry interval ±20 %, cut short by the holder's
// remaining TTL; awaitReady waits at most one interval too), and its try
// then takes up to one attempt timeout.
func WakeupBound(retryInterval, attemptTimeout time.Duration) time.Duration {
	return retryInterval*12/10 + attemptTimeout
}

// WithWakeupBound turns on the Wakeups check with bound (see
// [WakeupBound]); without it Wakeups is Unknown.
func WithWakeupBound(bound time.Duration) Option {
	return func(c *config) { c.wakeupBound = bound }
}

// checkWakeups: whenever a release completed and left the lock free (no
// other tenure active) while another worker's acquire was waiting (invoked
// before, still pending), some acquire must complete Ok within bound; a
// violation is a free lock left untaken for longer while a waiter that
// had waited since before the release was still waiting at the bound (or
// gave up after it). Releases within bound of the history's end are not
// judged.
func checkWakeups(h history.History, ix *index, bound time.Duration, ex examples) Result {
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no wakeup bound given"}
	}
	var acquires, releases []history.Op
	var end time.Duration
	for _, o := range h.Ops {
		end = max(end, o.Invoke, o.Complete)
		switch {
		case o.Worker == history.Nemesis:
		case o.Kind == history.Acquire:
			acquires = append(acquires, o)
		case o.Kind == history.Release && o.Outcome == history.Ok && o.Returned():
			releases = append(releases, o)
		}
	}
	var oks []time.Duration
	for _, a := range acquires {
		if a.Outcome == history.Ok && a.Returned() {
			oks = append(oks, a.Complete)
		}
	}
	slices.Sort(oks)
	r := Result{Verdict: Ok}
	for _, rel := range releases {
		f := rel.Complete
		if f+bound > end {
			continue
		}
		free := true
		for _, t := range ix.tenures {
			if t.Worker != rel.Worker && t.Start <= f && f < t.End {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		// The first Ok acquire completed after the release.
		i, _ := slices.BinarySearch(oks, f)
		if i < len(oks) && oks[i] <= f+bound {
			continue
		}
		for _, a := range acquires {
			if a.Worker == rel.Worker || a.Invoke >= f {
				continue
			}
			if a.Returned() && a.Complete <= f+bound {
				continue
			}
			next := "none"
			if i < len(oks) {
				next = (oks[i] - f).String()
			}
			ex.add(&r, fmt.Sprintf("free at %v after worker %d's release, worker %d waiting since %v, next acquisition after %s (bound %v)",
				f, rel.Worker, a.Worker, a.Invoke, next, bound), rel.ID, a.ID)
			break
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

// WithStarveBound turns on the Starvation check: an acquire may see at
// most n acquires of other workers that were invoked after it complete
// Ok before it completes. Without it Starvation is Unknown.
func WithStarveBound(n int) Option {
	return func(c *config) { c.starveBound = n }
}

// checkStarvation counts, for every acquire, the Ok acquires of other
// workers invoked after it that completed before it did (before the
// history's end for one still waiting): a waiter passed over by later
// arrivals more than bound times is starved. A lock that wakes the
// longest waiter is passed over only when a later caller finds the lock
// free first (a barging SET NX); one whose wake-ups are lost leaves its
// waiters to their retry timers, and whoever loops takes it meanwhile.
func checkStarvation(h history.History, bound int, ex examples) Result {
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no starvation bound given"}
	}
	var acquires []history.Op
	var end time.Duration
	for _, o := range h.Ops {
		end = max(end, o.Invoke, o.Complete)
		if o.Worker != history.Nemesis && o.Kind == history.Acquire {
			acquires = append(acquires, o)
		}
	}
	slices.SortStableFunc(acquires, func(x, y history.Op) int { return cmp.Compare(x.Invoke, y.Invoke) })
	r := Result{Verdict: Ok}
	for i, a := range acquires {
		until := end
		if a.Returned() {
			until = a.Complete
		}
		passed := 0
		for _, b := range acquires[i+1:] {
			if b.Invoke >= until {
				break
			}
			if b.Worker != a.Worker && b.Outcome == history.Ok && b.Returned() &&
				b.Invoke > a.Invoke && b.Complete < until {
				passed++
			}
		}
		if passed > bound {
			ex.add(&r, fmt.Sprintf("worker %d waiting since %v passed over by %d later acquires (bound %d)",
				a.Worker, a.Invoke, passed, bound), a.ID)
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}
