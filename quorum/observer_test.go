package quorum

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// recorder keeps every event it is told.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(_ context.Context, e observe.Event) {
	r.mu.Lock()
	e.Votes = append([]observe.Vote(nil), e.Votes...)
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) of(op observe.Op) []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.Event
	for _, e := range r.events {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) waitFor(t *testing.T, op observe.Op, d time.Duration) observe.Event {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if es := r.of(op); len(es) > 0 {
			return es[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %v event within %v", op, d)
	return observe.Event{}
}

// Every operation reaches the observer with its outcome: a grant, a
// contended TryLock (with the refusing votes), a Lock that waits for the
// holder, renewals, a release with its hold time, and a lease lost after a
// force-unlock.
func TestObserverSeesEveryOutcome(t *testing.T) {
	_, clients := cluster(t, 3)
	rec := &recorder{}
	const ttl = 600 * time.Millisecond
	c := newClient(t, clients, WithTTL(ttl), WithObserver(rec), WithFencing(true))
	m := mustMutex(t, c, "observed")
	ctx := t.Context()

	l1, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("second TryLock: %v", err)
	}
	attempts := rec.of(observe.OpAttempt)
	if len(attempts) != 2 {
		t.Fatalf("%d attempt events, want 2", len(attempts))
	}
	if a := attempts[0]; a.Outcome != observe.OutcomeOK || a.Contended || len(a.Votes) != 3 || a.Token == 0 {
		t.Fatalf("first attempt: %+v", a)
	}
	refused := 0
	for _, v := range attempts[1].Votes {
		if v.Answered && !v.Granted && v.Err == nil {
			refused++
		}
	}
	if a := attempts[1]; a.Outcome != observe.OutcomeContended || !a.Contended || refused < 2 {
		t.Fatalf("contended attempt: outcome %q contended %v, %d refusals: %+v", a.Outcome, a.Contended, refused, a.Votes)
	}
	acq := rec.of(observe.OpAcquire)
	if len(acq) != 2 || acq[0].Outcome != observe.OutcomeOK || acq[1].Outcome != observe.OutcomeContended || acq[1].Err == nil {
		t.Fatalf("acquire events: %+v", acq)
	}

	// A waiter: its Lock returns after the holder unlocks, and its wait is
	// at least the time the holder kept the lock.
	got := make(chan *Lease, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(ttl) // the watchdog renews l1 at ttl/3 meanwhile
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := <-got
	if l2 == nil {
		t.FailNow()
	}
	rel := rec.of(observe.OpRelease)
	if len(rel) != 1 || rel[0].Outcome != observe.OutcomeOK || rel[0].Held < ttl {
		t.Fatalf("release events: %+v (held at least %v)", rel, ttl)
	}
	var waited observe.Event
	for _, e := range rec.of(observe.OpAcquire) {
		if e.Outcome == observe.OutcomeOK && e.Token == l2.Token() {
			waited = e
		}
	}
	if waited.Duration < ttl/2 {
		t.Fatalf("the waiter's acquire event says it waited %v; it waited for the holder (~%v)", waited.Duration, ttl)
	}
	if ext := rec.of(observe.OpExtend); len(ext) == 0 || !ext[0].Watchdog || ext[0].Outcome != observe.OutcomeOK {
		t.Fatalf("no successful watchdog renewal reported: %+v", ext)
	}

	// Lost: the lock is removed under the holder; its next renewal finds a
	// quorum saying it is not held.
	if _, err := c.Admin().ForceUnlock(ctx, "observed", "test"); err != nil {
		t.Fatal(err)
	}
	lost := rec.waitFor(t, observe.OpLost, 5*ttl)
	if lost.Outcome != observe.OutcomeLost || !errors.Is(lost.Err, ErrLeaseLost) || lost.Held <= 0 {
		t.Fatalf("lost event: %+v", lost)
	}
	var lostRenewal bool
	for _, e := range rec.of(observe.OpExtend) {
		lostRenewal = lostRenewal || e.Outcome == observe.OutcomeLost
	}
	if !lostRenewal {
		t.Fatal("the renewal that found the lock gone is not reported as lost")
	}
	if err := l2.Unlock(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Unlock after loss: %v", err)
	}
	rel = rec.of(observe.OpRelease)
	if last := rel[len(rel)-1]; last.Outcome != observe.OutcomeLost || !errors.Is(last.Err, ErrLeaseLost) {
		t.Fatalf("release of a lost lease: %+v", last)
	}
}

// A fixed lease time that runs out is reported as expired.
func TestObserverExpired(t *testing.T) {
	_, clients := cluster(t, 3)
	rec := &recorder{}
	c := newClient(t, clients, WithObserver(rec))
	m := mustMutex(t, c, "short", WithLeaseTime(200*time.Millisecond))
	l, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e := rec.waitFor(t, observe.OpLost, 3*time.Second)
	if e.Outcome != observe.OutcomeExpired || !errors.Is(e.Err, ErrLeaseExpired) {
		t.Fatalf("%+v", e)
	}
	_ = l.Unlock(t.Context())
}

// With no observer the hooks allocate nothing and never call out.
func TestObserverHooksFreeWhenUnset(t *testing.T) {
	_, clients := cluster(t, 1)
	c := newClient(t, clients)
	m := mustMutex(t, c, "free")
	ctx := t.Context()
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	var (
		lease  = l
		errRes error
	)
	allocs := testing.AllocsPerRun(200, func() {
		m.observeAcquire(ctx, time.Now(), &lease, &errRes)
		l.observeEnd(ErrLeaseLost)
	})
	if allocs != 0 {
		t.Fatalf("hooks without an observer allocate %.1f times per call", allocs)
	}
	if c.cfg.observer != nil {
		t.Fatal("an observer is set by default")
	}
	if c2 := newClient(t, clients, WithLogger(nil), WithObserver(nil)); c2.cfg.observer != nil {
		t.Fatal("WithLogger(nil) or WithObserver(nil) installed an observer")
	}
}

// WithLogger logs through log/slog: routine outcomes at Debug, a lost lease
// at Error with the lock's name.
func TestWithLogger(t *testing.T) {
	_, clients := cluster(t, 3)
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelInfo})
	rec := &recorder{}
	c := newClient(t, clients, WithTTL(600*time.Millisecond), WithLogger(slog.New(h)), WithObserver(rec))
	m := mustMutex(t, c, "logged")
	ctx := t.Context()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().ForceUnlock(ctx, "logged", "test"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, observe.OpLost, 3*time.Second)
	_ = l.Unlock(ctx)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if strings.Contains(out, "level=DEBUG") {
		t.Errorf("Debug records passed an Info handler:\n%s", out)
	}
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "lease lost") || !strings.Contains(out, "lock=logged") {
		t.Fatalf("no Error record for the lost lease:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TryLock+Unlock on three nodes without an observer and with one that does
// nothing: the difference is what observing costs (the per-node votes are
// built only when an observer is set).
func BenchmarkObserver(b *testing.B) {
	_, clients := testutil.Servers(b, 3, localredis.Config{})
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"none", nil},
		{"noop", []Option{WithObserver(observerFunc(func(context.Context, observe.Event) {}))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// A generous attempt budget: the machine is shared, and a
			// failed TryLock would end the benchmark.
			c, err := New(clients, append(bc.opts, WithAttemptTimeout(3*time.Second))...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m, _ := c.Mutex("bench-observer")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := m.TryLock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
