package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/ctxend"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

// ErrNotObtained is wrapped by a Locker's error when the lock was certainly
// not obtained (held by someone else, no quorum, the wait ran out). The
// workload records such an acquisition as Fail; any other error as Unknown.
var ErrNotObtained = errors.New("workload: lock not obtained")

// errFollowed ends a follower's deliveries in the history (an Observe op
// that failed): it no longer follows from then on.
var errFollowed = errors.New("workload: the run ended; no longer observing")

// Locker is the lock under test, as the workload uses it. Implementations
// must be safe for concurrent use; each successful call returns its own
// Lease. Errors for "not obtained" wrap ErrNotObtained.
type Locker interface {
	// TryLock tries once.
	TryLock(ctx context.Context) (Lease, error)
	// Lock waits until the lock is obtained or ctx ends.
	Lock(ctx context.Context) (Lease, error)
}

// Lease is one held acquisition.
type Lease interface {
	// Unlock gives the lock back.
	Unlock(ctx context.Context) error
	// Token is the fencing token; 0 for locks without one.
	Token() int64
	// Until is when the lease's validity ends as the client believes it
	// (zero if the lock does not say).
	Until() time.Time
}

// Signaller is the optional ability of a Lease to tell its holder that it
// ended (lost, expired): Done closes then, as quorum.Lease's does. The
// workload's critical section watches it: a worker does not write once it
// is closed, and the history records when it closed (a Signal op), so the
// checker can count a lease taken over without its holder being told.
type Signaller interface {
	Done() <-chan struct{}
}

// MetaSignals is the history label the workload sets ("done") when the
// leases signal their end, so that a missing Signal means "not told", not
// "cannot tell".
const MetaSignals = "signals"

// Gate is where a worker can be paused: Wait returns at once normally and
// blocks while a pause is in effect (chaos.ClientPause implements it).
// The worker's ctx carries its lease's validity deadline (LeaseUntil), so a
// gate can choose to hold only a holder whose lease outlasts the pause.
type Gate interface {
	Wait(ctx context.Context) error
}

type leaseUntilKey struct{}

// WithLeaseUntil returns ctx carrying a lease's validity deadline, as the
// workload hands it to a Gate (for gates' tests).
func WithLeaseUntil(ctx context.Context, until time.Time) context.Context {
	return context.WithValue(ctx, leaseUntilKey{}, until)
}

// LeaseUntil returns the validity deadline of the lease a worker waiting at
// a Gate holds (zero when its lease reports none, or ctx is not a
// worker's).
func LeaseUntil(ctx context.Context) time.Time {
	u, _ := ctx.Value(leaseUntilKey{}).(time.Time)
	return u
}

// Worker is one client of the workload: its id in the history, its own
// lock client, and an optional pause gate.
type Worker struct {
	ID     int
	Locker Locker
	Gate   Gate
}

// Range is a span of durations drawn from uniformly.
type Range struct{ Min, Max time.Duration }

func (r Range) draw(rng *rand.Rand) time.Duration {
	if r.Max <= r.Min {
		return max(r.Min, 0)
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// Config tunes a run. The zero value gives the defaults documented on each
// field.
type Config struct {
	// Work is the time between read and write; default 2–10 ms.
	Work Range
	// Think is the pause between a release and the next acquire; default
	// 0–5 ms.
	Think Range
	// AcquireTimeout bounds each Lock call; default 2 s.
	AcquireTimeout time.Duration
	// ReleaseTimeout bounds each Unlock call; default 1 s.
	ReleaseTimeout time.Duration
	// TryLock makes workers call TryLock (one attempt) instead of Lock,
	// followed by the think time when it fails.
	TryLock bool
	// CounterLock: only holders of this lock name write the resource
	// (the batched workload's shared name); "" lets every exclusive
	// holder write. Shared (read) holders never write.
	CounterLock string
	// Guard, when set, is written by every holder that writes the
	// resource, with its token (the guarded workload): once right after
	// the acquire (its token as the value) and again just before its
	// resource write (the same value), so each tenure writes twice under
	// one token and a paused holder's second write meets the next
	// holder's first.
	Guard Guard
	// Seed makes the work and think times of worker w follow from (Seed, w):
	// its k-th tenure works and thinks for the k-th pair of Choices,
	// whether its acquisition succeeded or not.
	Seed uint64
	// Proclaims is the pause between the Proclaims of a holder whose
	// Lease is a Proclaimer (an election's leader) while it holds, the
	// first right after its acquire; default 100 ms. A pause, not a
	// period: after a Proclaim that a fault held up, nodes that missed it
	// keep the older value for a whole pause, while followers (who read
	// more often) read it.
	Proclaims time.Duration
	// LeaderReads is how often a worker whose Locker is a LeaderReader
	// (an election's follower) reads the leader; default 25 ms (a
	// quarter of the Proclaims' pause).
	LeaderReads time.Duration
}

func (c Config) withDefaults() Config {
	if c.Work == (Range{}) {
		c.Work = Range{2 * time.Millisecond, 10 * time.Millisecond}
	}
	if c.Think == (Range{}) {
		c.Think = Range{0, 5 * time.Millisecond}
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = 2 * time.Second
	}
	if c.ReleaseTimeout <= 0 {
		c.ReleaseTimeout = time.Second
	}
	if c.Proclaims <= 0 {
		c.Proclaims = 100 * time.Millisecond
	}
	if c.LeaderReads <= 0 {
		c.LeaderReads = 25 * time.Millisecond
	}
	return c
}

// panics collects the panics of a run's goroutines.
type panics struct {
	mu   sync.Mutex
	errs []error
}

// run calls f, turning a panic into a PanicError of worker.
func (p *panics) run(worker int, f func()) {
	defer func() {
		if v := recover(); v != nil {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.errs = append(p.errs, &PanicError{Worker: worker, Value: v, Stack: debug.Stack()})
		}
	}()
	f()
}

func (p *panics) all() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.errs...)
}

// Run runs the workers until ctx ends, recording into rec; the resource res
// must record into the same rec. Workers whose Locker is an Observer also
// follow it, and those whose Locker is a LeaderReader read it, until ctx
// ends. It returns when every worker has finished its current tenure. The
// error reports a panic in a worker (a PanicError: the worker stopped
// there), misuse of the recorder (a bug in the workload), or invalid
// arguments.
func Run(ctx context.Context, rec *history.Recorder, res *resource.Counter, workers []Worker, cfg Config) error {
	if rec == nil || res == nil {
		return errors.New("workload: Run needs a recorder and a resource")
	}
	workers = Expand(workers)
	seen := map[int]bool{}
	for _, w := range workers {
		if w.Locker == nil {
			return fmt.Errorf("workload: worker %d has no Locker", w.ID)
		}
		if w.ID < 0 || seen[w.ID] {
			return fmt.Errorf("workload: worker ids must be distinct and ≥ 0, got %d twice or negative", w.ID)
		}
		seen[w.ID] = true
	}
	cfg = cfg.withDefaults()
	var wg sync.WaitGroup
	p := &panics{}
	wg.Go(func() {
		<-ctx.Done()
		rec.SetMeta(history.MetaRunEnd, strconv.FormatInt(int64(at(rec, time.Now())), 10))
	})
	for _, w := range workers {
		wg.Go(func() {
			r := runner{w: w, rec: rec, res: res, cfg: cfg, choices: newChoices(cfg, w.ID), panics: p}
			p.run(w.ID, func() { r.loop(ctx) })
		})
		if o, ok := w.Locker.(Observer); ok {
			wg.Go(func() { p.run(w.ID, func() { follow(ctx, rec, w.ID, o) }) })
		}
		if l, ok := w.Locker.(LeaderReader); ok {
			wg.Go(func() { p.run(w.ID, func() { readLeader(ctx, rec, w.ID, l, cfg) }) })
		}
	}
	wg.Wait()
	return errors.Join(append(p.all(), rec.Err())...)
}

// follow records o's deliveries until ctx ends.
func follow(ctx context.Context, rec *history.Recorder, worker int, o Observer) {
	ch := o.Observe(ctx)
	defer func() {
		for range ch {
		}
	}()
	for {
		select {
		case d, ok := <-ch:
			if ok {
				rec.Observed(worker, d.Term, d.Value, at(rec, d.From))
				continue
			}
		case <-ctx.Done():
		}
		// The follower stops when the run ends, not when its last read
		// (cut off, maybe) returns.
		rec.Invoke(history.Op{Worker: worker, Kind: history.Observe}).Fail(errFollowed)
		return
	}
}

// readLeader reads l every cfg.LeaderReads until ctx ends; a read that
// cannot tell is recorded as failed (a read has no effect).
func readLeader(ctx context.Context, rec *history.Recorder, worker int, l LeaderReader, cfg Config) {
	for !ctxend.Ended(ctx) {
		call := rec.Invoke(history.Op{Worker: worker, Kind: history.LeaderRead})
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ReleaseTimeout)
		term, value, err := l.Leader(rctx)
		cancel()
		if err != nil {
			call.Fail(err)
		} else {
			call.LeaderRead(term, value)
		}
		sleep(ctx, cfg.LeaderReads)
	}
}

type runner struct {
	w       Worker
	rec     *history.Recorder
	res     *resource.Counter
	cfg     Config
	choices *choices
	panics  *panics
	// terms counts the worker's elected tenures (see tenure's proclaims).
	terms int
}

func (r *runner) loop(ctx context.Context) {
	// Ended, not ctx.Err: a think time that ends at the run's last instant
	// must not start a tenure, whether or not the run's timer has
	// cancelled ctx yet (a replay must not depend on which ran first).
	for !ctxend.Ended(ctx) {
		c := r.choices.next()
		r.tenure(ctx, c.Work)
		sleep(ctx, c.Think)
	}
}

// Choice is the random part of one tenure: how long it works between its
// read and its write (if it got the lock), and how long it thinks before
// the next acquisition.
type Choice struct{ Work, Think time.Duration }

// choices draws a worker's tenures' choices, one pair per tenure, from
// (Seed, worker): the k-th tenure gets the k-th pair whatever happened to
// the ones before (a failed acquisition draws its pair too), so a replay
// with the same seed makes the same choices.
type choices struct {
	cfg Config
	rng *rand.Rand
}

func newChoices(cfg Config, worker int) *choices {
	return &choices{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(worker)))}
}

func (c *choices) next() Choice {
	w := c.cfg.Work.draw(c.rng)
	return Choice{Work: w, Think: c.cfg.Think.draw(c.rng)}
}

// Choices returns the choices of worker's first n tenures under cfg (its
// Seed, Work and Think, defaults filled in), as Run makes them.
func Choices(cfg Config, worker, n int) []Choice {
	c := newChoices(cfg.withDefaults(), worker)
	out := make([]Choice, n)
	for i := range out {
		out[i] = c.next()
	}
	return out
}

// tenure makes one acquire and, when it succeeds, the read, the write and
// the release. The acquire and the critical section run on contexts of
// their own: the end of the run stops new tenures, not the current one.
func (r *runner) tenure(ctx context.Context, work time.Duration) {
	var hold Hold
	if d, ok := r.w.Locker.(Describer); ok {
		hold = d.Hold()
	}
	acq := r.rec.AcquireOf(r.w.ID, hold.Locks, hold.Shared, hold.Role)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.AcquireTimeout)
	var (
		lease Lease
		err   error
	)
	if r.cfg.TryLock {
		lease, err = r.w.Locker.TryLock(actx)
	} else {
		lease, err = r.w.Locker.Lock(actx)
	}
	cancel()
	switch {
	case err == nil && lease == nil:
		acq.Unknown(errors.New("workload: Locker returned neither a lease nor an error"))
		return
	case errors.Is(err, ErrNotObtained):
		acq.Fail(err)
		return
	case err != nil:
		acq.Unknown(err)
		return
	}
	p, proclaims := lease.(Proclaimer)
	if proclaims {
		acq.Elected(uint64(max(lease.Token(), 0)), r.at(lease.Until()), p.Value())
	} else {
		acq.Acquired(uint64(max(lease.Token(), 0)), r.at(lease.Until()))
	}
	id := acq.ID()
	// The lease's end signal, watched for the whole tenure.
	var done <-chan struct{}
	stopWatch, watched := make(chan struct{}), make(chan struct{})
	if s, ok := lease.(Signaller); ok {
		done = s.Done()
		r.rec.SetMeta(MetaSignals, "done")
		go func() {
			defer close(watched)
			select {
			case <-done:
				r.rec.Signal(r.w.ID, id)
			case <-stopWatch:
			}
		}()
	} else {
		close(watched)
	}

	stopProclaims := make(chan struct{})
	var proclaimer sync.WaitGroup
	endProclaims := sync.OnceFunc(func() { close(stopProclaims); proclaimer.Wait() })
	defer endProclaims() // also when the tenure panics
	if proclaims {
		r.terms++
	}
	// Every other term proclaims nothing: its campaign's value stands for
	// the whole term, so a follower must learn of the term by reading it,
	// not from the message of a later value.
	if proclaims && r.terms%2 == 1 {
		proclaimer.Go(func() { r.panics.run(r.w.ID, func() { r.proclaim(ctx, p, id, lease.Token(), done, stopProclaims) }) })
	}

	writes := !hold.Shared && (r.cfg.CounterLock == "" || slices.Contains(hold.Locks, r.cfg.CounterLock))
	if r.cfg.Guard != nil && writes {
		// A guarded holder claims the guard with its token first, so a
		// holder paused past its lease meets the next holder's token.
		r.guardWrite(ctx, id, lease.Token(), lease.Token())
	}
	v := r.res.ReadToken(r.w.ID, id, uint64(max(lease.Token(), 0)))
	sleep(context.WithoutCancel(ctx), work)
	// A careful client checks its lease before acting on it — its
	// validity and its end signal...
	if u := lease.Until(); writes && (u.IsZero() || time.Now().Before(u)) && !closed(done) {
		// ...and can still be paused right after the check.
		if r.w.Gate != nil {
			_ = r.w.Gate.Wait(WithLeaseUntil(context.WithoutCancel(ctx), u))
		}
		if r.cfg.Guard != nil {
			r.guardWrite(ctx, id, lease.Token(), v+1)
		}
		_ = r.res.Write(r.w.ID, id, v+1, uint64(max(lease.Token(), 0))) // a rejection is recorded
	}

	// The signal counts only while the worker holds: stop watching before
	// the release (which ends the lease too); so do the proclaims.
	endProclaims()
	close(stopWatch)
	<-watched
	rel := r.rec.Release(r.w.ID, id)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ReleaseTimeout)
	err = lease.Unlock(rctx)
	rcancel()
	if err != nil {
		rel.Fail(err)
		return
	}
	rel.Ok()
}

// proclaim proclaims a new value, pausing cfg.Proclaims after each, from
// now until stop closes or the lease ends (done), recording each Proclaim.
func (r *runner) proclaim(ctx context.Context, p Proclaimer, lease history.OpID, term int64, done <-chan struct{}, stop <-chan struct{}) {
	t := time.NewTimer(r.cfg.Proclaims)
	defer t.Stop()
	for k := 1; ; k++ {
		v := ProclaimValue(r.w.ID, term, k)
		call := r.rec.Invoke(history.Op{Worker: r.w.ID, Kind: history.Proclaim, Lease: lease, Token: uint64(max(term, 0)), Text: v})
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ReleaseTimeout)
		err := p.Proclaim(pctx, v)
		cancel()
		switch ProclaimOutcome(err) {
		case history.Ok:
			call.Ok()
		case history.Fail:
			call.Fail(err)
		default:
			call.Unknown(err)
		}
		t.Reset(r.cfg.Proclaims)
		select {
		case <-t.C:
		case <-stop:
			return
		case <-done:
			return
		}
	}
}

// closed reports whether done is closed (false for nil).
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// at converts a deadline to the run's clock.
func (r *runner) at(t time.Time) time.Duration { return at(r.rec, t) }

// at converts an instant to rec's clock (0 for the zero time).
func at(rec *history.Recorder, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	if c, ok := rec.Clock().(interface{ At(time.Time) time.Duration }); ok {
		return c.At(t)
	}
	return rec.Clock().Now() + time.Until(t)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
