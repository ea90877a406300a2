package history

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Recorder collects the operations of one run. It is safe for concurrent
// use by any number of workers, the resource and the nemesis. The zero value
// is not usable; call [NewRecorder].
type Recorder struct {
	clock Clock

	mu   sync.Mutex
	ops  []Op
	done []bool
	meta map[string]string
	errs []error
}

// NewRecorder returns a Recorder stamping times with clock. The same clock
// must be used for every timestamp of the run (lease deadlines included).
func NewRecorder(clock Clock) *Recorder {
	return &Recorder{clock: clock, meta: map[string]string{}}
}

// Clock returns the run's clock.
func (r *Recorder) Clock() Clock { return r.clock }

// now never returns 0, which means "not returned" in an Op.
func (r *Recorder) now() time.Duration { return max(r.clock.Now(), 1) }

// SetMeta sets a label of the history (mode, scenario, seed, …).
func (r *Recorder) SetMeta(key, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.meta[key] = value
}

// Invoke records the start of an operation and stamps its invoke time. Of
// op it uses Worker, Kind, Lease, Token, Value, Name, Locks, Shared, Role and Text; ID, times and
// outcome are the Recorder's. Until completed the operation's outcome is
// Unknown. Prefer the typed helpers (Acquire, Release, …) where they fit.
func (r *Recorder) Invoke(op Op) Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Stamp under the lock so that ids follow invoke order.
	op.ID = OpID(len(r.ops) + 1)
	op.Invoke = r.now()
	op.Complete = 0
	op.Outcome = Unknown
	op.Error = ""
	r.ops = append(r.ops, op)
	r.done = append(r.done, false)
	return Call{r: r, id: op.ID}
}

// Acquire records that worker starts acquiring the lock. Complete the call
// with Acquired, Fail (certainly not acquired) or Unknown (timeout: maybe).
func (r *Recorder) Acquire(worker int) Call {
	return r.Invoke(Op{Worker: worker, Kind: Acquire})
}

// AcquireOf records that worker starts acquiring the named locks (nil: the
// run's one lock), shared or exclusive, in a role (see [Op.Role]).
func (r *Recorder) AcquireOf(worker int, locks []string, shared bool, role string) Call {
	return r.Invoke(Op{Worker: worker, Kind: Acquire, Locks: locks, Shared: shared, Role: role})
}

// Extend records that worker starts extending the lease acquired by lease.
// Complete with Extended, Fail or Unknown.
func (r *Recorder) Extend(worker int, lease OpID) Call {
	return r.Invoke(Op{Worker: worker, Kind: Extend, Lease: lease})
}

// Release records that worker starts releasing the lease acquired by lease.
// The worker's tenure ends here, whatever the outcome.
func (r *Recorder) Release(worker int, lease OpID) Call {
	return r.Invoke(Op{Worker: worker, Kind: Release, Lease: lease})
}

// Signal records that worker's lease (the acquire lease) told it that it
// ended: an instant, completed at once.
func (r *Recorder) Signal(worker int, lease OpID) {
	r.Invoke(Op{Worker: worker, Kind: Signal, Lease: lease}).Ok()
}

// Observed records that worker's Observe delivered term (0: no leader)
// with its value, now; from is when the read behind the delivery may have
// begun at the earliest (on the run's clock; see [Observe]).
func (r *Recorder) Observed(worker int, term uint64, value string, from time.Duration) {
	c := r.Invoke(Op{Worker: worker, Kind: Observe, Token: term, Text: value})
	r.mu.Lock()
	if o := &r.ops[c.id-1]; from > 0 && from < o.Invoke {
		o.Invoke = from
	}
	r.mu.Unlock()
	c.Ok()
}

// NemesisStart records that the nemesis starts injecting the fault name;
// complete it with Ok once the fault is in place.
func (r *Recorder) NemesisStart(name string) Call {
	return r.Invoke(Op{Worker: Nemesis, Kind: NemesisStart, Name: name})
}

// NemesisEnd records that the nemesis starts healing the fault name;
// complete it with Ok once healed.
func (r *Recorder) NemesisEnd(name string) Call {
	return r.Invoke(Op{Worker: Nemesis, Kind: NemesisEnd, Name: name})
}

// History returns a copy of everything recorded so far. Operations not yet
// completed appear with outcome Unknown and Complete 0.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{Ops: append([]Op(nil), r.ops...)}
	if len(r.meta) > 0 {
		h.Meta = maps.Clone(r.meta)
	}
	return h
}

// Err reports misuse seen so far: calls completed twice. A workload should
// check it at the end of a run; nil if none.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// ErrCompleted is reported by [Recorder.Err] for a call completed twice.
var ErrCompleted = errors.New("history: call already completed")

func (r *Recorder) complete(id OpID, outcome Outcome, err error, set func(*Op)) {
	t := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	i := int(id) - 1
	if i < 0 || i >= len(r.ops) {
		r.errs = append(r.errs, fmt.Errorf("history: complete of unknown op #%d", id))
		return
	}
	if r.done[i] {
		// First completion wins; the second is a workload bug worth seeing.
		r.errs = append(r.errs, fmt.Errorf("%w: op #%d (%s) completed again as %s", ErrCompleted, id, r.ops[i].Kind, outcome))
		return
	}
	r.done[i] = true
	op := &r.ops[i]
	op.Complete = t
	op.Outcome = outcome
	if err != nil {
		op.Error = err.Error()
	}
	if set != nil {
		set(op)
	}
}

// Call is an invoked operation waiting for its completion. Exactly one
// completion method must be called once; the first one wins and a second is
// reported by [Recorder.Err]. A Call is a small value and may be copied.
type Call struct {
	r  *Recorder
	id OpID
}

// ID is the operation's id; for an acquire it is the lease id that later
// operations of the tenure pass as their lease.
func (c Call) ID() OpID { return c.id }

// Ok completes the call as successful.
func (c Call) Ok() { c.r.complete(c.id, Ok, nil, nil) }

// Fail completes the call as certainly without effect; err may be nil.
func (c Call) Fail(err error) { c.r.complete(c.id, Fail, err, nil) }

// Unknown completes the call with an unknown effect (a timeout, a lost
// reply); err may be nil.
func (c Call) Unknown(err error) { c.r.complete(c.id, Unknown, err, nil) }

// Acquired completes an acquire as successful with the fencing token (0 for
// none) and the lease's validity deadline on the run's clock (0 for none).
func (c Call) Acquired(token uint64, validUntil time.Duration) {
	c.Elected(token, validUntil, "")
}

// Elected completes an acquire as Acquired does, with the value the
// campaign published (an election's term; "" for none).
func (c Call) Elected(token uint64, validUntil time.Duration, value string) {
	c.r.complete(c.id, Ok, nil, func(o *Op) {
		o.Token = token
		o.ValidUntil = validUntil
		o.Text = value
	})
}

// LeaderRead completes a leader read as successful, having read term (0:
// no leader) with value.
func (c Call) LeaderRead(term uint64, value string) {
	c.r.complete(c.id, Ok, nil, func(o *Op) {
		o.Token = term
		o.Text = value
	})
}

// Extended completes an extend as successful with the new validity deadline.
func (c Call) Extended(validUntil time.Duration) {
	c.r.complete(c.id, Ok, nil, func(o *Op) { o.ValidUntil = validUntil })
}

// Refused completes a guard write the guard refused, last being the token
// it had accepted last.
func (c Call) Refused(last uint64, err error) {
	c.r.complete(c.id, Fail, err, func(o *Op) { o.Last = last })
}

// ReadValue completes a read as successful, having read v.
func (c Call) ReadValue(v int64) {
	c.r.complete(c.id, Ok, nil, func(o *Op) { o.Value = v })
}
