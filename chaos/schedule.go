package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// FaultOp is what happened to a fault.
type FaultOp string

const (
	// OpInject is a call to Fault.Inject.
	OpInject FaultOp = "inject"
	// OpRecover is a call to Fault.Recover.
	OpRecover FaultOp = "recover"
)

// Event is one Inject or Recover call as it happened. The fault took effect
// (or was healed) somewhere between Start and End.
type Event struct {
	Step  int    // index of the schedule step or nemesis move
	Fault string // Fault.String()
	Op    FaultOp
	Start time.Time
	End   time.Time
	Err   error
}

func (e Event) String() string {
	s := fmt.Sprintf("#%d %s %s [%s, %v]", e.Step, e.Op, e.Fault, e.Start.Format("15:04:05.000"), e.End.Sub(e.Start).Round(time.Millisecond))
	if e.Err != nil {
		s += " error: " + e.Err.Error()
	}
	return s
}

// Window is the time a fault was (possibly) in effect: from the start of its
// Inject to the end of its Recover. To is zero while it is still injected.
// It errs on the wide side, which is the safe side for a checker that asks
// "was something broken at this instant?".
type Window struct {
	Step     int
	Fault    string
	From, To time.Time
	Err      error // the first Inject or Recover error, if any
}

// Recorder keeps the events of schedules and nemeses, for reports that draw
// fault windows next to lock tenures. Safe for concurrent use; the zero
// value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

func (r *Recorder) add(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns the events so far, ordered by start time.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	out := append([]Event(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Windows pairs each Inject with the Recover of the same step.
func (r *Recorder) Windows() []Window {
	var out []Window
	open := map[int]int{} // step -> index in out
	for _, e := range r.Events() {
		switch e.Op {
		case OpInject:
			open[e.Step] = len(out)
			out = append(out, Window{Step: e.Step, Fault: e.Fault, From: e.Start, Err: e.Err})
		case OpRecover:
			if i, ok := open[e.Step]; ok {
				out[i].To = e.End
				if out[i].Err == nil {
					out[i].Err = e.Err
				}
				delete(open, e.Step)
			}
		}
	}
	return out
}

// do runs one Inject or Recover and records it.
func (r *Recorder) do(ctx context.Context, step int, f Fault, op FaultOp) error {
	start := time.Now()
	var err error
	if op == OpInject {
		err = f.Inject(ctx)
	} else {
		err = f.Recover(ctx)
	}
	r.add(Event{Step: step, Fault: f.String(), Op: op, Start: start, End: time.Now(), Err: err})
	if err != nil {
		return fmt.Errorf("chaos: step %d %s %v: %w", step, op, f, err)
	}
	return nil
}

// healTimeout bounds an Inject or a Recover run by a schedule or nemesis.
const healTimeout = 30 * time.Second

// runStep injects f, holds it, and always recovers it. An Inject that has
// begun is allowed to finish even if ctx ends meanwhile (on a detached
// context bounded by healTimeout), so a fault is never left half made; then
// the hold is cut short and Recover runs, also on a detached bounded
// context, so a cancelled run never leaves a fault behind. Recover runs even
// when Inject failed, to undo what it did before failing.
func runStep(ctx context.Context, rec *Recorder, step int, f Fault, hold time.Duration) error {
	ictx, icancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	errIn := rec.do(ictx, step, f, OpInject)
	icancel()
	if errIn == nil {
		sleep(ctx, hold)
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	return errors.Join(errIn, rec.do(hctx, step, f, OpRecover))
}

// sleep waits d or until ctx ends; it reports whether it slept the whole d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Step is one entry of a Schedule: at offset At from the schedule's start,
// inject Fault, hold it for Hold, then recover it.
type Step struct {
	At    time.Duration
	Hold  time.Duration
	Fault Fault
}

// Schedule is a fixed list of timed faults; steps may overlap (but one
// Fault value must not be in two overlapping steps).
type Schedule []Step

// Run plays the schedule and returns when every started step has recovered.
// Steps whose At has not come when ctx ends are not started; an Inject in
// progress finishes, and injected faults are recovered early. Every Inject and Recover is recorded in rec (which
// may be nil). The error joins every failed Inject or Recover.
func (s Schedule) Run(ctx context.Context, rec *Recorder) error {
	start := time.Now()
	errs := make([]error, len(s))
	var wg sync.WaitGroup
	for i, st := range s {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleep(ctx, st.At-time.Since(start)) {
				return
			}
			errs[i] = runStep(ctx, rec, i, st.Fault, st.Hold)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Range is a span of durations a nemesis draws from (uniformly).
type Range struct{ Min, Max time.Duration }

func (r Range) draw(rng *rand.Rand, def Range) time.Duration {
	if r.Min <= 0 && r.Max <= 0 {
		r = def
	}
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// Move is one round of a nemesis: rest (all healthy) for Rest, then inject
// Faults[Fault] and hold it for Hold, then heal.
type Move struct {
	Step  int
	Fault int // index into Nemesis.Faults
	Rest  time.Duration
	Hold  time.Duration
}

// Nemesis is a seeded random fault injector in the manner of Jepsen's: it
// picks a fault, holds it, heals, rests, and repeats, one fault at a time.
// Everything it will do follows from Seed and the fault list, so the same
// seed and list replay the same sequence (see Moves); what it did, with
// timestamps, goes to Recorder.
type Nemesis struct {
	Seed   uint64
	Faults []Fault
	// Hold is how long a fault stays injected; zero means 1–3 s.
	Hold Range
	// Rest is the healthy time before each fault; zero means 0.5–2 s.
	Rest Range
	// Recorder receives every Inject and Recover; may be nil.
	Recorder *Recorder
}

var (
	defaultHold = Range{Min: time.Second, Max: 3 * time.Second}
	defaultRest = Range{Min: 500 * time.Millisecond, Max: 2 * time.Second}
)

type moveGen struct {
	n    *Nemesis
	rng  *rand.Rand
	step int
}

func (n *Nemesis) gen() *moveGen {
	return &moveGen{n: n, rng: rand.New(rand.NewPCG(n.Seed, n.Seed^0x9e3779b97f4a7c15))}
}

func (g *moveGen) next() Move {
	m := Move{Step: g.step}
	g.step++
	m.Rest = g.n.Rest.draw(g.rng, defaultRest)
	m.Fault = g.rng.IntN(len(g.n.Faults))
	m.Hold = g.n.Hold.draw(g.rng, defaultHold)
	return m
}

// Moves returns the first k moves this nemesis makes: the same for the same
// Seed, fault count, Hold and Rest, whatever happens while it runs.
func (n *Nemesis) Moves(k int) []Move {
	if len(n.Faults) == 0 {
		return nil
	}
	g := n.gen()
	out := make([]Move, k)
	for i := range out {
		out[i] = g.next()
	}
	return out
}

// Schedule turns the first k moves into a fixed Schedule (same faults, same
// timings), e.g. to replay a recorded run without randomness in the loop.
func (n *Nemesis) Schedule(k int) Schedule {
	var s Schedule
	var at time.Duration
	for _, m := range n.Moves(k) {
		at += m.Rest
		s = append(s, Step{At: at, Hold: m.Hold, Fault: n.Faults[m.Fault]})
		at += m.Hold
	}
	return s
}

// Run makes moves until ctx ends, and heals the fault in effect before it
// returns. The error joins failed Injects and Recovers (ctx ending is not an
// error).
func (n *Nemesis) Run(ctx context.Context) error {
	if len(n.Faults) == 0 {
		return errors.New("chaos: nemesis without faults")
	}
	g := n.gen()
	var errs []error
	for {
		m := g.next()
		if !sleep(ctx, m.Rest) {
			return errors.Join(errs...)
		}
		if err := runStep(ctx, n.Recorder, m.Step, n.Faults[m.Fault], m.Hold); err != nil {
			errs = append(errs, err)
		}
	}
}
