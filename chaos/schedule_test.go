package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFault records the calls made to it.
type fakeFault struct {
	name      string
	mu        sync.Mutex
	calls     []string
	failOnce  bool
	injected  bool
	maxActive *int // shared counter of faults in effect, to check overlap
	active    *int
	shared    *sync.Mutex
}

func (f *fakeFault) String() string { return f.name }

func (f *fakeFault) Inject(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "inject")
	if f.failOnce {
		f.failOnce = false
		return errors.New("boom")
	}
	f.injected = true
	if f.shared != nil {
		f.shared.Lock()
		*f.active++
		*f.maxActive = max(*f.maxActive, *f.active)
		f.shared.Unlock()
	}
	return nil
}

func (f *fakeFault) Recover(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "recover")
	if f.injected && f.shared != nil {
		f.shared.Lock()
		*f.active--
		f.shared.Unlock()
	}
	f.injected = false
	return nil
}

func fakes(n int) []Fault {
	out := make([]Fault, n)
	for i := range out {
		out[i] = &fakeFault{name: fmt.Sprintf("f%d", i)}
	}
	return out
}

func TestNemesisSameSeedSameMoves(t *testing.T) {
	faults := fakes(5)
	a := &Nemesis{Seed: 42, Faults: faults}
	b := &Nemesis{Seed: 42, Faults: faults}
	c := &Nemesis{Seed: 43, Faults: faults}
	ma, mb, mc := a.Moves(50), b.Moves(50), c.Moves(50)
	if !slices.Equal(ma, mb) {
		t.Fatal("same seed gave different moves")
	}
	if slices.Equal(ma, mc) {
		t.Fatal("different seeds gave the same 50 moves")
	}
	used := map[int]bool{}
	for i, m := range ma {
		if m.Step != i || m.Fault < 0 || m.Fault >= len(faults) {
			t.Fatalf("bad move %+v", m)
		}
		if m.Hold < defaultHold.Min || m.Hold > defaultHold.Max || m.Rest < defaultRest.Min || m.Rest > defaultRest.Max {
			t.Fatalf("move %+v outside the default ranges", m)
		}
		used[m.Fault] = true
	}
	if len(used) < 3 {
		t.Fatalf("50 moves used only faults %v", used)
	}
}

// A run records what the seed dictates, and a second run from the same seed
// replays the same sequence of faults and hold times.
func TestNemesisRunReplaysFromSeed(t *testing.T) {
	run := func(seed uint64) ([]Event, []Move) {
		rec := NewRecorder()
		n := &Nemesis{
			Seed:     seed,
			Faults:   fakes(4),
			Hold:     Range{Min: 5 * time.Millisecond, Max: 15 * time.Millisecond},
			Rest:     Range{Min: time.Millisecond, Max: 5 * time.Millisecond},
			Recorder: rec,
		}
		ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
		defer cancel()
		if err := n.Run(ctx); err != nil {
			t.Fatal(err)
		}
		return rec.Events(), n.Moves(200)
	}
	ev1, moves := run(7)
	ev2, _ := run(7)
	if len(ev1) < 10 {
		t.Fatalf("only %d events in 400ms", len(ev1))
	}
	// Events come in inject/recover pairs that follow the planned moves.
	for i := 0; i+1 < len(ev1); i += 2 {
		in, out := ev1[i], ev1[i+1]
		m := moves[in.Step]
		if in.Op != OpInject || out.Op != OpRecover || in.Step != out.Step || in.Fault != out.Fault {
			t.Fatalf("events %d,%d not a pair: %v / %v", i, i+1, in, out)
		}
		if in.Fault != fmt.Sprintf("f%d", m.Fault) {
			t.Fatalf("step %d injected %s, plan says f%d", in.Step, in.Fault, m.Fault)
		}
		// (the last hold is cut short when the run's context ends)
		if held := out.Start.Sub(in.End); held < m.Hold && i+2 < len(ev1) {
			t.Fatalf("step %d held %v, plan says %v", in.Step, held, m.Hold)
		}
		if i > 0 && in.Start.Sub(ev1[i-1].End) < m.Rest {
			t.Fatalf("step %d rested less than %v", in.Step, m.Rest)
		}
	}
	// The replay made the same moves (as far as both got).
	k := min(len(ev1), len(ev2))
	for i := 0; i < k; i++ {
		if ev1[i].Fault != ev2[i].Fault || ev1[i].Op != ev2[i].Op || ev1[i].Step != ev2[i].Step {
			t.Fatalf("replay differs at event %d: %v vs %v", i, ev1[i], ev2[i])
		}
	}
	// The last fault was healed when Run returned.
	if last := ev1[len(ev1)-1]; last.Op != OpRecover {
		t.Fatalf("run ended with %v", last)
	}
	w := NewRecorder()
	for _, e := range ev1 {
		w.add(e)
	}
	for _, win := range w.Windows() {
		if win.To.IsZero() || !win.To.After(win.From) {
			t.Fatalf("window %+v not closed", win)
		}
	}
}

func TestNemesisOneFaultAtATime(t *testing.T) {
	var mu sync.Mutex
	var active, maxActive int
	var faults []Fault
	for i := 0; i < 3; i++ {
		faults = append(faults, &fakeFault{name: fmt.Sprint(i), shared: &mu, active: &active, maxActive: &maxActive})
	}
	n := &Nemesis{Seed: 1, Faults: faults, Hold: Range{Min: time.Millisecond, Max: 3 * time.Millisecond}, Rest: Range{Min: 0, Max: time.Millisecond}}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if maxActive != 1 || active != 0 {
		t.Fatalf("max %d faults at once, %d left active; want 1 and 0", maxActive, active)
	}
}

func TestScheduleRunsTimedStepsAndAlwaysRecovers(t *testing.T) {
	a := &fakeFault{name: "a"}
	b := &fakeFault{name: "b", failOnce: true}
	late := &fakeFault{name: "late"}
	rec := NewRecorder()
	s := Schedule{
		{At: 0, Hold: 60 * time.Millisecond, Fault: a},
		{At: 20 * time.Millisecond, Hold: 10 * time.Millisecond, Fault: b},
		{At: time.Hour, Hold: time.Second, Fault: late},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Run(ctx, rec)
	if err == nil || !containsAll(err.Error(), "step 1", "inject", "b", "boom") {
		t.Fatalf("Run error %v, want b's inject failure", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Run waited for a step beyond the context")
	}
	if !slices.Equal(a.calls, []string{"inject", "recover"}) || !slices.Equal(b.calls, []string{"inject", "recover"}) || len(late.calls) != 0 {
		t.Fatalf("calls a=%v b=%v late=%v", a.calls, b.calls, late.calls)
	}
	ws := rec.Windows()
	if len(ws) != 2 {
		t.Fatalf("windows %+v", ws)
	}
	byFault := map[string]Window{}
	for _, w := range ws {
		byFault[w.Fault] = w
	}
	wa, wb := byFault["a"], byFault["b"]
	if wb.Err == nil || wa.Err != nil {
		t.Fatalf("errors in windows: a=%v b=%v", wa.Err, wb.Err)
	}
	if d := wa.To.Sub(wa.From); d < 60*time.Millisecond {
		t.Fatalf("a held %v, want ≥ 60ms", d)
	}
	if wb.From.Sub(start) < 20*time.Millisecond {
		t.Fatalf("b started %v after the schedule, want ≥ 20ms", wb.From.Sub(start))
	}
}

// A cancelled run recovers the fault it holds.
func TestScheduleCancelRecovers(t *testing.T) {
	f := &fakeFault{name: "f"}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- Schedule{{Hold: time.Hour, Fault: f}}.Run(ctx, nil) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if !slices.Equal(f.calls, []string{"inject", "recover"}) {
		t.Fatalf("calls %v", f.calls)
	}
}

func TestNemesisScheduleMatchesMoves(t *testing.T) {
	n := &Nemesis{Seed: 9, Faults: fakes(3)}
	moves := n.Moves(5)
	s := n.Schedule(5)
	var at time.Duration
	for i, st := range s {
		at += moves[i].Rest
		if st.At != at || st.Hold != moves[i].Hold || st.Fault != n.Faults[moves[i].Fault] {
			t.Fatalf("step %d = %+v, move %+v", i, st, moves[i])
		}
		at += moves[i].Hold
	}
}

func TestClientPauseGate(t *testing.T) {
	g := &ClientPause{Name: "w1"}
	ctx := bounded(t, 5*time.Second)
	if err := g.Wait(ctx); err != nil || g.Paused() {
		t.Fatalf("open gate: %v paused=%v", err, g.Paused())
	}
	if err := g.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	released := make(chan time.Time, 1)
	go func() {
		_ = g.Wait(ctx)
		released <- time.Now()
	}()
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	if err := g.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while paused: %v", err)
	}
	cancel()
	select {
	case <-released:
		t.Fatal("a waiter passed a closed gate")
	default:
	}
	recovered := time.Now()
	if err := g.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-released:
		if at.Before(recovered) {
			t.Fatal("waiter released before Recover")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("waiter not released by Recover")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
