package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

func acquisitions(h history.History) (Acquisitions, AcquireLatency) {
	var a Acquisitions
	var d []time.Duration
	end, ended := h.RunEnd()
	for _, o := range h.Ops {
		if o.Kind != history.Acquire {
			continue
		}
		// An attempt still waiting when the run stopped was cut off by
		// the run's end (a campaigner outlasted by the others, a Lock
		// whose timeout runs past the end): it tells nothing of the
		// lock's availability either way.
		if ended && (!o.Returned() || o.Complete > end) {
			continue
		}
		a.Attempted++
		switch o.Outcome {
		case history.Ok:
			a.Ok++
			d = append(d, o.Duration())
		case history.Fail:
			a.Failed++
		default:
			a.Unknown++
		}
	}
	if a.Attempted > 0 {
		a.Availability = float64(a.Ok) / float64(a.Attempted)
	}
	slices.Sort(d)
	return a, AcquireLatency{Samples: len(d), P50: percentile(d, 0.50), P99: percentile(d, 0.99)}
}

// percentile is the nearest-rank percentile of sorted d (0 if empty).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func checkOverlaps(ix *index, valid bool, ex examples) Result {
	if valid && !slices.ContainsFunc(ix.tenures, func(t Tenure) bool { return t.ValidUntil != 0 }) {
		if len(ix.tenures) == 0 {
			return Result{Verdict: Ok, Note: "no tenures"}
		}
		return Result{Verdict: Unknown, Note: "the lock reported no validity deadlines"}
	}
	r := Result{Verdict: Ok}
	for _, o := range Overlaps(ix.tenures, valid) {
		ex.add(&r, fmt.Sprintf("worker %d (lease #%d, from %v) and worker %d (lease #%d, from %v) both held the lock%s for %v",
			o.A.Worker, o.A.Lease, o.A.Start, o.B.Worker, o.B.Lease, o.B.Start, validWord(valid), o.To-o.From),
			o.A.Lease, o.B.Lease)
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r
}

func validWord(valid bool) string {
	if valid {
		return " with valid leases"
	}
	return ""
}

// resourceOps are the reads and writes in the resource's order: by invoke
// time (the resource stamps under its lock, so its operations do not
// overlap), then id.
func resourceOps(h history.History) []history.Op {
	var ops []history.Op
	for _, o := range h.Ops {
		if o.Kind == history.Read || o.Kind == history.Write {
			ops = append(ops, o)
		}
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int {
		return cmp.Or(cmp.Compare(a.Invoke, b.Invoke), cmp.Compare(a.ID, b.ID))
	})
	return ops
}

// checkLostUpdates walks the resource's operations in order, keeping the
// set of values the counter may hold (one value, unless a write of unknown
// outcome makes it "old or new"). An accepted write is a lost update when
// the value its writer read in the same tenure — or, for a write not
// preceded by a read, value−1 — is not a value the counter may have held
// just before the write: some other accepted write came in between and was
// overwritten. A read serves one write.
func checkLostUpdates(ix *index, ex examples) LostUpdates {
	r := LostUpdates{Result: Result{Verdict: Ok}}
	possible := []int64{0}
	var last history.Op // last accepted write
	lastRead := map[holder]history.Op{}
	unknown := 0
	for _, o := range resourceOps(ix.h) {
		hd, _ := ix.holderOf(o)
		switch {
		case o.Kind == history.Read && o.Outcome == history.Ok:
			lastRead[hd] = o
			possible = []int64{o.Value} // the resource showed the real value
		case o.Rejected():
			delete(lastRead, hd) // its read is spent, as in the critical-section check
		case o.Kind == history.Write && o.Outcome == history.Unknown:
			unknown++
			if !slices.Contains(possible, o.Value) {
				possible = append(possible, o.Value)
			}
			delete(lastRead, hd)
		case o.Accepted():
			r.Accepted++
			based, read := o.Value-1, history.OpID(0)
			if rd, ok := lastRead[hd]; ok {
				based, read = rd.Value, rd.ID
				delete(lastRead, hd)
			}
			if !slices.Contains(possible, based) {
				ops := []history.OpID{}
				if read != 0 {
					ops = append(ops, read)
				}
				if last.ID != 0 {
					ops = append(ops, last.ID)
				}
				ops = append(ops, o.ID)
				by := "the initial value"
				if last.ID != 0 {
					by = fmt.Sprintf("written by worker %d in #%d", last.Worker, last.ID)
				}
				ex.add(&r.Result, fmt.Sprintf("worker %d wrote %d based on %d, but the counter held %d (%s), which was overwritten",
					o.Worker, o.Value, based, possible[0], by), ops...)
			}
			possible = []int64{o.Value}
			last = o
		}
	}
	r.Final = possible[0]
	r.Deficit = int64(r.Accepted) - r.Final
	switch {
	case r.Count > 0:
		r.Verdict = Violated
	case unknown > 0:
		r.Verdict = Unknown
		r.Note = fmt.Sprintf("%d writes of unknown outcome", unknown)
	}
	if len(possible) > 1 {
		r.Note = fmt.Sprintf("final value one of %v (writes of unknown outcome)", possible)
	}
	return r
}

// checkStale judges every accepted write: stale when its token is lower
// than a token already accepted, or when it was written after its lease's
// validity deadline and after an accepted write of a holder whose lease
// began after this one (a later holder, which the late write overwrites).
// A write of an earlier holder, late itself, does not make the next
// holder's write stale: that holder came first in the order of leases, and
// a fence let both through in that order. Rejected writes are counted
// apart.
func checkStale(ix *index, ex examples) (accepted, rejected Result) {
	accepted, rejected = Result{Verdict: Ok}, Result{Verdict: Ok}
	var hi uint64
	var hiOp history.Op
	// The accepted write of the latest lease so far (a write outside any
	// tenure begins its own at its invocation): enough to tell whether a
	// later holder than a given one has written.
	var latest history.Op
	var latestStart time.Duration
	written := false
	unjudged := 0
	for _, o := range resourceOps(ix.h) {
		if o.Rejected() {
			ex.add(&rejected, fmt.Sprintf("worker %d's write of %d with token %d was rejected", o.Worker, o.Value, o.Token), o.ID)
			continue
		}
		if !o.Accepted() {
			continue
		}
		_, ten := ix.holderOf(o)
		switch {
		case o.Token > 0 && o.Token < hi:
			ex.add(&accepted, fmt.Sprintf("worker %d's write with token %d was accepted after token %d (#%d, worker %d)",
				o.Worker, o.Token, hi, hiOp.ID, hiOp.Worker), hiOp.ID, o.ID)
		case ten != nil && ten.ValidUntil > 0 && o.Invoke > ten.ValidUntil:
			if written && latestStart > ten.Start {
				ex.add(&accepted, fmt.Sprintf("worker %d wrote %v after its lease #%d expired, over #%d by worker %d",
					o.Worker, o.Invoke-ten.ValidUntil, ten.Lease, latest.ID, latest.Worker), ten.Lease, latest.ID, o.ID)
			}
		case o.Token == 0 && (ten == nil || ten.ValidUntil == 0):
			unjudged++
		}
		if o.Token > hi {
			hi, hiOp = o.Token, o
		}
		start := o.Invoke
		if ten != nil {
			start = ten.Start
		}
		if !written || start >= latestStart {
			latest, latestStart, written = o, start, true
		}
	}
	switch {
	case accepted.Count > 0:
		accepted.Verdict = Violated
	case unjudged > 0:
		accepted.Verdict = Unknown
		accepted.Note = fmt.Sprintf("%d accepted writes had neither a token nor a lease deadline", unjudged)
	}
	if rejected.Count > 0 {
		rejected.Note = "the fenced resource refused stale tokens"
	}
	return accepted, rejected
}

// checkTokenOrder orders Ok acquisitions by completion and counts those
// whose token is not above every earlier token (a repeated token counts).
// Acquisitions without a token are skipped.
func checkTokenOrder(ix *index, ex examples) Result {
	var acqs []history.Op
	for _, as := range ix.acquires {
		acqs = append(acqs, as...)
	}
	slices.SortFunc(acqs, func(a, b history.Op) int {
		return cmp.Or(cmp.Compare(a.Complete, b.Complete), cmp.Compare(a.ID, b.ID))
	})
	r := Result{Verdict: Ok}
	// The highest token handed out so far per lock name, to exclusive and
	// to shared holders: an acquisition must top every earlier one it
	// excludes (a writer every holder of its names, a reader the writers).
	type best struct{ excl, shared history.Op }
	hi := map[string]*best{}
	names := func(a history.Op) []string {
		if a.Locks == nil {
			return []string{""}
		}
		return a.Locks
	}
	without := 0
	for _, a := range acqs {
		if a.Token == 0 {
			without++
			continue
		}
		var top history.Op
		for _, n := range names(a) {
			if b := hi[n]; b != nil {
				if b.excl.Token > top.Token {
					top = b.excl
				}
				if !a.Shared && b.shared.Token > top.Token {
					top = b.shared
				}
			}
		}
		if a.Token <= top.Token {
			ex.add(&r, fmt.Sprintf("worker %d got token %d at %v, after worker %d got %d at %v",
				a.Worker, a.Token, a.Complete, top.Worker, top.Token, top.Complete), top.ID, a.ID)
			continue
		}
		for _, n := range names(a) {
			b := hi[n]
			if b == nil {
				b = &best{}
				hi[n] = b
			}
			if a.Shared {
				if a.Token > b.shared.Token {
					b.shared = a
				}
			} else {
				b.excl = a
			}
		}
	}
	switch {
	case r.Count > 0:
		r.Verdict = Violated
	case len(acqs) > 0 && without == len(acqs):
		r.Verdict = Unknown
		r.Note = "no acquisition carried a fencing token"
	}
	if without > 0 && without < len(acqs) {
		r.Note = fmt.Sprintf("%d of %d acquisitions carried no token", without, len(acqs))
	}
	return r
}

// checkSignals counts takeovers the holder was not told of in time, and
// writes made after a lease had signalled its end (see Report.Signals).
func checkSignals(ix *index, grace time.Duration, ex examples) (Result, int) {
	after := 0
	for _, o := range ix.h.Ops {
		if o.Kind != history.Write || o.Lease == 0 {
			continue
		}
		if i, ok := ix.byLease[o.Lease]; ok {
			if s := ix.tenures[i].Signalled; s != 0 && o.Invoke > s {
				after++
			}
		}
	}
	if ix.h.Meta["signals"] != "done" {
		return Result{Verdict: Unknown, Note: "the leases do not signal their end"}, after
	}
	r := Result{Verdict: Ok}
	for _, t := range ix.tenures {
		if t.ValidUntil == 0 {
			continue
		}
		// The first takeover: another worker's tenure that began after
		// this lease's validity ended, while its holder still held.
		var by *Tenure
		for k := range ix.tenures {
			u := &ix.tenures[k]
			if u.Worker == t.Worker || !u.Excludes(t) || u.Start < t.ValidUntil || u.Start <= t.Start || u.Start >= t.End {
				continue
			}
			if by == nil || u.Start < by.Start {
				by = u
			}
		}
		if by == nil {
			continue
		}
		told := t.End // untold until it stopped holding
		if t.Signalled != 0 {
			told = min(told, t.Signalled)
		}
		if told > by.Start+grace {
			what := "was never told before releasing"
			if t.Signalled != 0 {
				what = fmt.Sprintf("was told %v after", t.Signalled-by.Start)
			}
			ex.add(&r, fmt.Sprintf("worker %d (lease #%d) held on while worker %d took the lock over at %v, and %s",
				t.Worker, t.Lease, by.Worker, by.Start, what), t.Lease, by.Lease)
		}
	}
	if r.Count > 0 {
		r.Verdict = Violated
	}
	return r, after
}

// HeldSection names the nemesis event of a critical section the harness
// holds open (the matrix's "slow-holder"): a window that is not a fault.
const HeldSection = "slow-holder"

// contested counts the acquire attempts (Lock calls) during which, at
// some instant, another worker held a valid lease while a fault was in
// effect (any instant, when the history has no fault): the attempt had to
// be refused then.
func contested(h history.History, ix *index) int {
	var faults []Window
	for _, w := range Windows(h) {
		if w.Name != HeldSection {
			faults = append(faults, w)
		}
	}
	if len(faults) == 0 {
		faults = []Window{{Start: 0, End: h.End() + 1}}
	}
	hEnd := h.End()
	n := 0
	for _, o := range h.Ops {
		if o.Kind != history.Acquire {
			continue
		}
		from, to := o.Invoke, o.Complete
		if !o.Returned() {
			to = hEnd
		}
		if slices.ContainsFunc(ix.tenures, func(t Tenure) bool {
			if t.Worker == o.Worker {
				return false
			}
			a, b := max(from, t.Start), min(to, t.ValidEnd())
			return a < b && slices.ContainsFunc(faults, func(w Window) bool { return max(a, w.Start) < min(b, w.End) })
		}) {
			n++
		}
	}
	return n
}
