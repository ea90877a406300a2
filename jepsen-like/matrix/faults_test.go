package matrix

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// fakeFault counts its calls and fails Inject with err.
type fakeFault struct {
	name string
	err  error

	mu                 sync.Mutex
	injected, recovers int
	injectedAt         time.Time
}

func (f *fakeFault) String() string { return f.name }
func (f *fakeFault) Inject(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.injected++
	f.injectedAt = time.Now()
	return f.err
}
func (f *fakeFault) Recover(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovers++
	return nil
}

func TestRecordedFaultWindows(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	ctx := t.Context()
	ok := record(rec, &fakeFault{name: "ok"})
	bad := record(rec, &fakeFault{name: "bad", err: errors.New("no")})
	if err := ok.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bad.Inject(ctx); err == nil {
		t.Fatal("the fault's error was swallowed")
	}
	_ = bad.Recover(ctx)
	_ = ok.Recover(ctx)
	h := rec.History()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	ws := checker.Windows(h)
	if len(ws) != 2 {
		t.Fatalf("windows %v, want 2", ws)
	}
	if h.Ops[1].Outcome != history.Fail || h.Ops[1].Error == "" {
		t.Errorf("failed inject recorded as %v", h.Ops[1])
	}
}

func TestGroupInjectsAllAndRecoversAll(t *testing.T) {
	a, b := &fakeFault{name: "a"}, &fakeFault{name: "b", err: errors.New("half done")}
	g := &group{name: "a+b", faults: []chaos.Fault{a, b}}
	if err := g.Inject(t.Context()); err == nil {
		t.Fatal("error lost")
	}
	if err := g.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.injected != 1 || b.injected != 1 || a.recovers != 1 || b.recovers != 1 {
		t.Errorf("calls: a %d/%d, b %d/%d; want 1/1 each (a failed Inject is recovered too)", a.injected, a.recovers, b.injected, b.recovers)
	}
}

// whileHolding injects once the worker waits at its gate, keeps it there
// for slow, and records the slow section.
func TestWhileHolding(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	g := &holdGate{}
	f := &fakeFault{name: "f"}
	w := &whileHolding{gate: g, f: f, wait: 5 * time.Second, slow: 50 * time.Millisecond, rec: rec, name: slowHolder}

	// The gate lets the worker through while unarmed.
	if err := g.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	injected := make(chan error, 1)
	go func() { injected <- w.Inject(t.Context()) }()
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	early := f.injected
	f.mu.Unlock()
	if early != 0 {
		t.Fatal("injected before the worker held the lock")
	}
	arrived := time.Now()
	if err := g.Wait(t.Context()); err != nil { // the worker, holding the lock
		t.Fatal(err)
	}
	left := time.Now()
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	if f.injectedAt.After(left) {
		t.Error("the worker left its critical section before the fault was in")
	}
	if d := left.Sub(arrived); d < 40*time.Millisecond {
		t.Errorf("worker held %v, want about slow (50ms)", d)
	}
	if err := w.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Passes freely again.
	if err := g.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range rec.History().Ops {
		names = append(names, string(o.Kind)+" "+o.Name)
	}
	if len(names) != 2 || names[0] != "nemesis-start "+slowHolder || names[1] != "nemesis-end "+slowHolder {
		t.Errorf("recorded %v, want the slow section's start and end", names)
	}
}

// No holder in time: the fault goes in anyway and the gate is disarmed.
func TestWhileHoldingWithoutHolder(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	g := &holdGate{}
	f := &fakeFault{name: "f"}
	w := &whileHolding{gate: g, f: f, wait: 10 * time.Millisecond, slow: time.Hour, rec: rec, name: slowHolder}
	if err := w.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = g.Wait(t.Context()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("gate still armed after the wait ran out")
	}
	if err := w.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.injected != 1 || f.recovers != 1 || len(rec.History().Ops) != 0 {
		t.Errorf("fault %d/%d, ops %v", f.injected, f.recovers, rec.History().Ops)
	}
}

// A fault aimed at the holder: pick gets the id of the worker that waits at
// the gate; without a holder nothing is injected.
func TestWhileHoldingPicksTheHolder(t *testing.T) {
	rec := history.NewRecorder(history.NewClock())
	faults := map[int]*fakeFault{}
	pick := func(h int) chaos.Fault {
		faults[h] = &fakeFault{name: "cut"}
		return faults[h]
	}
	w := &whileHolding{gate: &holdGate{}, pick: pick, wait: 5 * time.Second, slow: 10 * time.Millisecond, rec: rec, name: "x"}
	done := make(chan error, 1)
	go func() { done <- w.Inject(t.Context()) }()
	time.Sleep(10 * time.Millisecond)
	_ = w.gate.For(1).Wait(t.Context()) // worker 0 never comes; worker 2 passes freely after 1
	_ = w.gate.For(2).Wait(t.Context())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(faults) != 1 || faults[1] == nil || faults[1].injected != 1 || faults[1].recovers != 1 {
		t.Errorf("faults %v, want one injected and recovered for worker 1", faults)
	}

	none := &whileHolding{gate: &holdGate{}, pick: pick, wait: 10 * time.Millisecond, slow: time.Hour, rec: rec, name: "x"}
	if err := none.Inject(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := none.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(faults) != 1 {
		t.Errorf("a fault was picked without a holder: %v", faults)
	}
}

// A gate armed with a need holds only a worker whose lease has that much
// left: one about to expire passes (and the gate stays armed), one with
// time to spare is held; a worker whose lease says nothing is held.
func TestHoldGateNeedsLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		until time.Time
		held  bool
	}{
		{"short lease passes", time.Now().Add(10 * time.Millisecond), false},
		{"long lease is held", time.Now().Add(time.Hour), true},
		{"no deadline is held", time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &holdGate{}
			holding := g.arm(time.Minute)
			ctx := workload.WithLeaseUntil(t.Context(), tc.until)
			done := make(chan error, 1)
			go func() { done <- g.For(1).Wait(ctx) }()
			select {
			case <-holding:
				if !tc.held {
					t.Fatal("held a worker whose lease ends before the section would")
				}
				g.release()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			case err := <-done:
				if tc.held {
					t.Fatalf("passed a worker it should hold (%v)", err)
				}
				g.mu.Lock()
				armed := g.armed
				g.mu.Unlock()
				if !armed {
					t.Fatal("the gate disarmed for a worker it let through")
				}
				g.release()
			}
		})
	}
}
