package workload

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/resource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memLock is an in-process lease lock: one holder at a time, leases of a
// fixed length, tokens that increase with every grant. broken grants to
// everyone.
type memLock struct {
	lease  time.Duration
	broken bool

	mu     sync.Mutex
	holder *memLease
	token  int64
	wake   chan struct{}
}

type memLease struct {
	l     *memLock
	token int64
	until time.Time
}

func (l *memLock) TryLock(context.Context) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.broken && l.holder != nil && now.Before(l.holder.until) {
		return nil, ErrNotObtained
	}
	l.token++
	le := &memLease{l: l, token: l.token, until: now.Add(l.lease)}
	l.holder = le
	return le, nil
}

func (l *memLock) Lock(ctx context.Context) (Lease, error) {
	for {
		le, err := l.TryLock(ctx)
		if err == nil {
			return le, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func (le *memLease) Unlock(context.Context) error {
	le.l.mu.Lock()
	defer le.l.mu.Unlock()
	if le.l.holder != le {
		return errors.New("not held")
	}
	le.l.holder = nil
	return nil
}

func (le *memLease) Token() int64     { return le.token }
func (le *memLease) Until() time.Time { return le.until }

// gate blocks its first Wait until opened.
type gate struct {
	once    sync.Once
	waiting chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{waiting: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) Wait(ctx context.Context) error {
	first := false
	g.once.Do(func() { first = true; close(g.waiting) })
	if !first {
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func run(t *testing.T, l Locker, fenced bool, d time.Duration, gates map[int]Gate) (history.History, checker.Report) {
	t.Helper()
	rec := history.NewRecorder(history.NewClock())
	res := resource.NewUnfenced(rec)
	if fenced {
		res = resource.NewFenced(rec)
	}
	var ws []Worker
	for w := range 3 {
		ws = append(ws, Worker{ID: w, Locker: l, Gate: gates[w]})
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	cfg := Config{Work: Range{0, time.Millisecond}, Think: Range{0, time.Millisecond}, AcquireTimeout: 200 * time.Millisecond, Seed: 7}
	if err := Run(ctx, rec, res, ws, cfg); err != nil {
		t.Fatal(err)
	}
	h := rec.History()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return h, checker.Check(h, checker.WithTimeout(10*time.Second))
}

func TestCorrectLockPassesEveryCheck(t *testing.T) {
	h, r := run(t, &memLock{lease: time.Second}, true, 150*time.Millisecond, nil)
	if r.Acquires.Ok < 10 {
		t.Fatalf("only %d acquisitions", r.Acquires.Ok)
	}
	for name, res := range map[string]checker.Result{
		"mutual exclusion": r.MutualExclusion, "lease exclusion": r.LeaseExclusion, "lost updates": r.LostUpdates.Result,
		"stale accepted": r.StaleAccepted, "token order": r.TokenOrder, "register": r.Register, "critical sections": r.CriticalSections,
	} {
		if res.Verdict != checker.Ok {
			t.Errorf("%s: %v", name, res)
		}
	}
	// Every tenure is complete: acquire, read, write, release.
	// (Every Ok acquire: the availability leaves out those the run's end
	// overtook.)
	count := map[history.Kind]int{}
	acquired := 0
	for _, o := range h.Ops {
		count[o.Kind]++
		if o.Kind == history.Acquire && o.Outcome == history.Ok {
			acquired++
		}
		if !o.Returned() {
			t.Errorf("op never returned: %v", o)
		}
	}
	if count[history.Read] != acquired || count[history.Write] != acquired || count[history.Release] != acquired {
		t.Errorf("ops per kind %v for %d acquisitions", count, acquired)
	}
}

func TestBrokenLockIsCaught(t *testing.T) {
	_, r := run(t, &memLock{lease: time.Second, broken: true}, false, 150*time.Millisecond, nil)
	if r.MutualExclusion.Verdict != checker.Violated {
		t.Fatalf("a lock that grants to everyone: mutual exclusion %v", r.MutualExclusion)
	}
}

// A worker paused at its gate past its lease writes stale: accepted by an
// unfenced resource, rejected by a fenced one.
func TestPausedHolderWritesStale(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(map[bool]string{false: "unfenced", true: "fenced"}[fenced], func(t *testing.T) {
			g := newGate()
			go func() {
				<-g.waiting
				time.Sleep(120 * time.Millisecond) // > the 30 ms lease
				close(g.open)
			}()
			_, r := run(t, &memLock{lease: 30 * time.Millisecond}, fenced, 300*time.Millisecond, map[int]Gate{0: g})
			if r.MutualExclusion.Verdict != checker.Violated {
				t.Errorf("mutual exclusion %v, want violated (the paused tenure overlaps the next)", r.MutualExclusion)
			}
			if r.LeaseExclusion.Verdict != checker.Ok {
				t.Errorf("lease exclusion %v, want ok (the lock itself never granted twice)", r.LeaseExclusion)
			}
			if fenced {
				if r.StaleAccepted.Count != 0 || r.StaleRejected.Count == 0 {
					t.Errorf("fenced: stale accepted %v, rejected %v; want 0 and > 0", r.StaleAccepted, r.StaleRejected)
				}
			} else if r.StaleAccepted.Count == 0 {
				t.Errorf("unfenced: stale accepted %v, want > 0", r.StaleAccepted)
			}
		})
	}
}

// errLocker fails every acquisition with err.
type errLocker struct{ err error }

func (l errLocker) TryLock(context.Context) (Lease, error) { return nil, l.err }
func (l errLocker) Lock(context.Context) (Lease, error)    { return nil, l.err }

func TestAcquireOutcomes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want history.Outcome
	}{
		{"not obtained is a failure", errors.Join(ErrNotObtained, errors.New("held")), history.Fail},
		{"any other error is unknown", errors.New("i/o timeout"), history.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := history.NewRecorder(history.NewClock())
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			err := Run(ctx, rec, resource.NewUnfenced(rec), []Worker{{ID: 0, Locker: errLocker{tt.err}}}, Config{TryLock: true})
			if err != nil {
				t.Fatal(err)
			}
			h := rec.History()
			if len(h.Ops) == 0 {
				t.Fatal("nothing recorded")
			}
			for _, o := range h.Ops {
				if o.Kind != history.Acquire || o.Outcome != tt.want {
					t.Fatalf("op %v, want only acquires with outcome %s", o, tt.want)
				}
			}
		})
	}
}

func TestRunRejectsBadWorkers(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	res := resource.NewUnfenced(rec)
	l := &memLock{lease: time.Second}
	for name, ws := range map[string][]Worker{
		"no locker":    {{ID: 0}},
		"duplicate id": {{ID: 1, Locker: l}, {ID: 1, Locker: l}},
		"negative id":  {{ID: -1, Locker: l}},
	} {
		if err := Run(t.Context(), rec, res, ws, Config{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The seed fixes each worker's choices, tenure by tenure: the same seed
// gives the same work and think times, another seed or worker others, all
// within their ranges.
func TestSameSeedSameChoices(t *testing.T) {
	cfg := Config{Work: Range{2 * time.Millisecond, 10 * time.Millisecond}, Seed: 7}
	a, b := Choices(cfg, 1, 50), Choices(cfg, 1, 50)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("tenure %d: %v then %v from the same seed", i, a[i], b[i])
		}
		if a[i].Work < cfg.Work.Min || a[i].Work > cfg.Work.Max || a[i].Think < 0 || a[i].Think > 5*time.Millisecond {
			t.Fatalf("tenure %d: %v outside the ranges", i, a[i])
		}
	}
	other := cfg
	other.Seed = 8
	for name, c := range map[string][]Choice{"seed 8": Choices(other, 1, 50), "worker 2": Choices(cfg, 2, 50)} {
		same := 0
		for i := range c {
			if c[i] == a[i] {
				same++
			}
		}
		if same == len(a) {
			t.Errorf("%s made the same choices as seed 7, worker 1", name)
		}
	}
}

// panicLock panics in Lock, as a library with a planted bug may.
type panicLock struct{ memLock }

func (*panicLock) Lock(context.Context) (Lease, error) { panic("planted: nil term") }

// A worker that panics in the lock stops; Run reports the panic with its
// message and worker, and the other workers go on to the end.
func TestRunPanic(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	res := resource.NewFenced(rec)
	ok := &memLock{lease: time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := Run(ctx, rec, res, []Worker{{ID: 0, Locker: ok}, {ID: 1, Locker: &panicLock{}}}, Config{Seed: 1})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Worker != 1 || !strings.Contains(err.Error(), "worker 1 panicked: planted: nil term") || len(pe.Stack) == 0 {
		t.Fatalf("Run = %v, want worker 1's panic with its message and stack", err)
	}
	// The panic is the test's (the harness's), not the library's: it
	// leaves a cell unjudged.
	if lib, rest := SplitPanics(err); len(lib) != 0 || !errors.As(rest, &pe) {
		t.Errorf("SplitPanics = %v, %v; want the panic among the rest", lib, rest)
	}
	if n := checker.Check(rec.History(), checker.WithoutLinearizability()).Acquires.Ok; n < 2 {
		t.Errorf("%d acquisitions: the other worker stopped too", n)
	}
}
