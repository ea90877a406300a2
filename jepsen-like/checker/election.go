package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// RoleLeader is the role of a campaign in an election (the election
// workload): its tenure is a term, its token the term number.
const RoleLeader = "leader"

// ElectionResults are the checks of an election's terms (tenures whose
// acquire has RoleLeader) and of its followers' Observe deliveries. Each
// is Unknown when the history has no term.
type ElectionResults struct {
	// OneLeader: Count is the number of term numbers handed to more than
	// one campaign.
	OneLeader Result `json:"one_leader"`
	// TermsIncrease: Count is the number of terms not above every term
	// elected before their campaign began (real-time order, whatever the
	// faults: a term drawn later must be higher).
	TermsIncrease Result `json:"terms_increase"`
	// Observed: every follower's deliveries come in term order, and a
	// term that leads for at least the wakeup bound with no fault in
	// effect (nor in the FollowerRecovery before it) is delivered to every follower within that bound of its
	// election (or a later term is): Observe reads at least every retry
	// interval and on every pub/sub message (judged while the follower
	// follows: from its first delivery to its failed Observe op). Count is the number of
	// deliveries out of order plus the terms a follower missed.
	Observed Result `json:"observed"`
	// Replaced: when a term ends as its leader sees it (Unlock, or the
	// loss told by Done) while another campaigner waits, the next term
	// begins within the ended term's validity at its election (at most
	// the TTL) plus the wakeup bound and the longest Ok Proclaim of the
	// history (a new term publishes its first value first), unless a fault is in effect in that
	// time (faults count only when they may strike the nodes: see
	// WithClientFaults). A leader frozen or cut off is told of the loss
	// when its term runs out, so the bound covers a dead leader too.
	// Count is the number of terms not replaced in time.
	Replaced Result `json:"replaced"`
	// Values: each term's value is a linearizable register (porcupine):
	// its initial value is the campaign's, its writes the leader's
	// Proclaims (a Fail one never happened, an Unknown one may take
	// effect any time after its call), its reads the followers' Leader
	// reads and Observe deliveries of the term. A read never sees a value
	// a later read misses, nor a value no Proclaim of the term wrote.
	// Count is the number of terms whose reads have no linearization.
	// Unknown when no term's value was read (or the check was skipped or
	// timed out).
	Values Result `json:"values"`
}

// WithClientFaults says that the history's faults strike clients only
// (a paused or isolated holder, a stalled reply, a client's clock): the
// nodes keep serving the other workers, so the election's Replaced check
// is judged through the faults too.
func WithClientFaults() Option { return func(c *config) { c.clientFaults = true } }

// checkElection judges the terms and deliveries of h (see
// ElectionResults); bound is the wakeup bound (WithWakeupBound).
func checkElection(h history.History, ix *index, bound time.Duration, clientFaults bool, ex examples) ElectionResults {
	var terms []Tenure
	for _, t := range ix.tenures {
		if t.Role == RoleLeader && t.Token != 0 {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		u := Result{Verdict: Unknown, Note: "no terms"}
		return ElectionResults{u, u, u, u, u}
	}
	invoke := map[history.OpID]time.Duration{}
	for _, o := range h.Ops {
		if o.Kind == history.Acquire {
			invoke[o.ID] = o.Invoke
		}
	}
	slices.SortStableFunc(terms, func(a, b Tenure) int { return cmp.Compare(a.Start, b.Start) })
	var out ElectionResults

	out.OneLeader = Result{Verdict: Ok}
	first := map[uint64]Tenure{}
	for _, t := range terms {
		if o, dup := first[t.Token]; dup {
			ex.add(&out.OneLeader, fmt.Sprintf("term %d led by worker %d (from %v) and worker %d (from %v)",
				t.Token, o.Worker, o.Start, t.Worker, t.Start), o.Lease, t.Lease)
			continue
		}
		first[t.Token] = t
	}

	out.TermsIncrease = Result{Verdict: Ok}
	for _, b := range terms {
		for _, a := range terms {
			if a.Start >= invoke[b.Lease] {
				break
			}
			if a.Token >= b.Token {
				ex.add(&out.TermsIncrease, fmt.Sprintf("term %d (worker %d, campaign from %v) is not above term %d (worker %d, elected at %v)",
					b.Token, b.Worker, invoke[b.Lease], a.Token, a.Worker, a.Start), a.Lease, b.Lease)
				break
			}
		}
	}

	out.Observed = checkObserved(h, terms, bound, ex)
	out.Replaced = checkReplaced(h, terms, bound, clientFaults, ex)
	for _, r := range []*Result{&out.OneLeader, &out.TermsIncrease, &out.Observed, &out.Replaced} {
		if r.Count > 0 {
			r.Verdict = Violated
		}
	}
	return out
}

// FollowerRecovery is how long after a fault heals a follower may still
// be cut off: go-redis waits up to a second before it dials again a node
// whose dial failed, so a follower's reads recover that much after its
// connections do. Terms elected within it of a fault are not judged.
const FollowerRecovery = time.Second

// checkObserved judges the Observe ops (see ElectionResults.Observed).
func checkObserved(h history.History, terms []Tenure, bound time.Duration, ex examples) Result {
	seen := map[int][]history.Op{}     // follower → deliveries, in time order
	stopped := map[int]time.Duration{} // follower → when it stopped following
	for _, o := range h.Ops {
		switch {
		case o.Kind != history.Observe:
		case o.Outcome == history.Ok:
			// A delivery's time is its Complete (its Invoke is the
			// earliest its read may have begun).
			o.Invoke = o.Complete
			seen[o.Worker] = append(seen[o.Worker], o)
		default:
			stopped[o.Worker] = o.Invoke
		}
	}
	if len(seen) == 0 {
		return Result{Verdict: Unknown, Note: "no follower observed"}
	}
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no wakeup bound given"}
	}
	r := Result{Verdict: Ok}
	ws := Windows(h)
	end := h.End()
	followers := make([]int, 0, len(seen))
	for f := range seen {
		followers = append(followers, f)
	}
	slices.Sort(followers)
	for _, f := range followers {
		ds := seen[f]
		slices.SortStableFunc(ds, func(a, b history.Op) int { return cmp.Compare(a.Invoke, b.Invoke) })
		var last history.Op
		for _, d := range ds {
			if d.Token == 0 {
				continue // no leader: ordered by what follows
			}
			if d.Token < last.Token {
				ex.add(&r, fmt.Sprintf("follower %d was given term %d at %v after term %d at %v",
					f, d.Token, d.Invoke, last.Token, last.Invoke), last.ID, d.ID)
			}
			if d.Token > last.Token {
				last = d
			}
		}
		stop, ok := stopped[f]
		if !ok {
			stop = end
		}
		for _, t := range terms {
			until := t.Start + bound
			tEnd := t.End
			if t.Signalled != 0 && t.Signalled < tEnd {
				tEnd = t.Signalled
			}
			if tEnd < until || until > stop || ds[0].Invoke > t.Start || !faultFree(ws, t.Start-FollowerRecovery, until) {
				continue
			}
			if slices.ContainsFunc(ds, func(d history.Op) bool { return d.Token >= t.Token && d.Invoke <= until }) {
				continue
			}
			ex.add(&r, fmt.Sprintf("follower %d was not given term %d (worker %d, elected at %v, leading until %v) within %v",
				f, t.Token, t.Worker, t.Start, tEnd, bound), t.Lease)
		}
	}
	return r
}

// checkReplaced judges how soon an ended term is followed by the next
// (see ElectionResults.Replaced).
func checkReplaced(h history.History, terms []Tenure, bound time.Duration, clientFaults bool, ex examples) Result {
	if bound <= 0 {
		return Result{Verdict: Unknown, Note: "no wakeup bound given"}
	}
	ws := Windows(h)
	end := h.End()
	var campaigns []history.Op
	// A term begins only once its first value is published: a campaign
	// takes its lock attempt (in the wakeup bound) and a Proclaim's two
	// round trips. Those take what the run's Proclaims took: milliseconds
	// on an idle machine, hundreds on a loaded one; the longest Ok one
	// measures it (each of its round trips is bounded by an attempt
	// timeout).
	var publish time.Duration
	for _, o := range h.Ops {
		switch {
		case o.Kind == history.Acquire && o.Role == RoleLeader:
			campaigns = append(campaigns, o)
		case o.Kind == history.Proclaim && o.Outcome == history.Ok:
			publish = max(publish, o.Complete-o.Invoke)
		}
	}
	r := Result{Verdict: Ok}
	for _, t := range terms {
		// The term's end as its leader saw it: told of the loss, or its
		// release (Unlock) invoked.
		f := t.End
		if t.Signalled != 0 && t.Signalled < f {
			f = t.Signalled
		} else if !t.Released {
			continue
		}
		within := bound + publish + max(t.ValidUntil-t.Start, 0)
		if f+within > end || !clientFaults && !faultFree(ws, f, f+within) {
			continue
		}
		if slices.ContainsFunc(terms, func(u Tenure) bool { return u.Lease != t.Lease && u.Start > t.Start && u.Start <= f+within }) {
			continue
		}
		for _, a := range campaigns {
			if a.Worker == t.Worker || a.Invoke >= f || a.Returned() && a.Complete <= f+within {
				continue
			}
			ex.add(&r, fmt.Sprintf("term %d (worker %d) ended at %v, worker %d campaigning since %v, no next term within %v",
				t.Token, t.Worker, f, a.Worker, a.Invoke, within), t.Lease, a.ID)
			break
		}
	}
	return r
}
