package matrix

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// recorded wraps a fault so that its Inject and Recover are nemesis events
// in the history, stamped on the run's clock like everything else.
type recorded struct {
	f   chaos.Fault
	rec *history.Recorder
}

func record(rec *history.Recorder, f chaos.Fault) chaos.Fault { return recorded{f: f, rec: rec} }

func (r recorded) String() string { return r.f.String() }

func (r recorded) Inject(ctx context.Context) error {
	call := r.rec.NemesisStart(r.f.String())
	err := r.f.Inject(ctx)
	if err != nil {
		call.Fail(err)
		return err
	}
	call.Ok()
	return nil
}

func (r recorded) Recover(ctx context.Context) error {
	call := r.rec.NemesisEnd(r.f.String())
	err := r.f.Recover(ctx)
	if err != nil {
		call.Fail(err)
		return err
	}
	call.Ok()
	return nil
}

// counted counts f's injections in n.
type counted struct {
	f chaos.Fault
	n *atomic.Int64
}

func (c counted) String() string { return c.f.String() }

func (c counted) Inject(ctx context.Context) error {
	c.n.Add(1)
	return c.f.Inject(ctx)
}

func (c counted) Recover(ctx context.Context) error { return c.f.Recover(ctx) }

// failover is a split-brain failover of a group: the master is cut off from
// its replica, the replica is promoted, and the connections to the old
// master are closed, so clients that follow the group's master reconnect to
// the new one, while clients configured with the old master's address
// reconnect to it and keep locking there. Recover heals the link and makes
// the old master a replica of the new one (dropping what it accepted
// meanwhile).
//
// With pin set, the clients that keep the old master's address dial pin's
// node: Inject leaves it on the old master, Recover moves it to the new
// one (and closes the connections to the demoted node), so every failover
// of a series splits the clients again, not only every second one.
type failover struct {
	g   *chaos.Group
	pin *pin
	p   *chaos.Promote
}

func (f *failover) String() string { return "failover(" + f.g.Name() + ")" }

func (f *failover) Inject(ctx context.Context) error {
	if f.p != nil {
		return fmt.Errorf("matrix: %v injected twice", f)
	}
	old := f.g.Master()
	if f.pin != nil {
		f.pin.set(old)
	}
	p := &chaos.Promote{Group: f.g}
	f.p = p
	if err := p.Inject(ctx); err != nil {
		return err
	}
	return old.Proxy().ResetConnections(ctx)
}

func (f *failover) Recover(ctx context.Context) error {
	if f.p == nil {
		return nil
	}
	p := f.p
	f.p = nil
	old := f.pin.get()
	if err := p.Recover(ctx); err != nil || f.pin == nil {
		return err
	}
	f.pin.set(f.g.Master())
	if old == nil || old == f.g.Master() {
		return nil
	}
	return old.Proxy().ResetConnections(ctx)
}

// pin is the node the clients pinned to "the master before the failover"
// dial: the group's master, except during a split.
type pin struct {
	mu sync.Mutex
	n  *chaos.Node
}

func (p *pin) get() *chaos.Node {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pin) set(n *chaos.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
}

// options are client options that dial the pinned node, whichever it is
// when the client (re)connects.
func (p *pin) options() *redis.Options {
	o := p.get().Options()
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, p.get().Addr())
	}
	return o
}

// series strikes again and again, one strike at a time, from its Inject
// until until has passed (or n strikes, if n > 0): strike i is next(i) — a
// fresh fault, since gates, stalls and holders keep state per strike —
// held for the hold next gives after its Inject returned, then recovered,
// then rest. With period set, strike i starts period·i after the first
// instead (at once if the previous one ran late), so that slow injects and
// heals do not add up. A strike starts only if its hold ends before
// until — or, while fewer than min strikes were made, before limit: on a
// loaded machine strikes take longer, and the cell's workers run on until
// the series is done (cell.repeaters). A strike whose fault says it missed
// (a stall that caught no grant in time: nothing was injected) does not
// count toward min. Recover waits for the series to end
// (stopping it, the strike in progress recovered at once, if its ctx ends
// first) and returns the strikes' errors. The series itself is not a fault
// event: its strikes are.
type series struct {
	name        string
	next        func(i int) (f chaos.Fault, hold time.Duration)
	rest, until time.Duration
	period      time.Duration
	n, min      int
	limit       time.Duration
	done        chan struct{} // made by newSeries, closed when it ends
	stop        context.CancelFunc
	started     bool
	err         error
	strikes     int
	overtime    bool // strikes started after until, to reach min
}

func newSeries(s *series) *series {
	s.done = make(chan struct{})
	return s
}

func (s *series) String() string { return s.name }

func (s *series) Inject(ctx context.Context) error {
	if s.started {
		return fmt.Errorf("matrix: series %s injected twice", s.name)
	}
	s.started = true
	// Inject's context ends when Inject returns; the series runs on its
	// own until it is done.
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	begin := time.Now()
	end, limit := begin.Add(s.until), begin.Add(max(s.limit, s.until))
	go func() {
		defer close(s.done)
		var errs []error
		for i := 0; ctx.Err() == nil && (s.n <= 0 || i < s.n); i++ {
			f, hold := s.next(i)
			if over := time.Now().Add(hold); over.After(end) {
				if s.strikes >= s.min || over.After(limit) {
					break
				}
				s.overtime = true
			}
			if err := strike(ctx, f, hold); err != nil {
				errs = append(errs, err)
			}
			if m, ok := f.(misser); !ok || !m.missed() {
				s.strikes++
			}
			rest := s.rest
			if s.period > 0 {
				rest = time.Until(begin.Add(time.Duration(i+1) * s.period))
			}
			if !sleep(ctx, rest) {
				break
			}
		}
		s.err = errors.Join(errs...)
	}()
	return nil
}

// misser is a fault that can strike without injecting anything.
type misser interface{ missed() bool }

// strike injects f, holds it (cut short when ctx ends) and always recovers
// it, Inject and Recover on detached bounded contexts (as a schedule step
// does), so a stopped series never leaves a fault behind.
func strike(ctx context.Context, f chaos.Fault, hold time.Duration) error {
	ictx, icancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	errIn := f.Inject(ictx)
	icancel()
	if errIn == nil {
		sleep(ctx, hold)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	return errors.Join(errIn, f.Recover(rctx))
}

func (s *series) Recover(ctx context.Context) error {
	if !s.started {
		return nil
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		s.stop()
		<-s.done
	}
	s.stop()
	return s.err
}

// group runs faults together, all at once: Inject injects them in
// parallel, Recover recovers them in parallel (each fault whose Inject was
// called, also when it failed, to undo what it did).
type group struct {
	name   string
	faults []chaos.Fault
}

func (g *group) String() string { return g.name }

func (g *group) each(do func(chaos.Fault) error) error {
	errs := make([]error, len(g.faults))
	var wg sync.WaitGroup
	for i, f := range g.faults {
		wg.Go(func() { errs[i] = do(f) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (g *group) Inject(ctx context.Context) error {
	return g.each(func(f chaos.Fault) error { return f.Inject(ctx) })
}

func (g *group) Recover(ctx context.Context) error {
	return g.each(func(f chaos.Fault) error { return f.Recover(ctx) })
}

// holdGate makes one worker's critical section long on demand: once armed,
// the first worker to visit the gate (holding the lock, its lease checked
// and valid) blocks there until the gate is opened; the others pass. Each
// worker passes its own view (For), so the gate knows who the holder is.
type holdGate struct {
	mu      sync.Mutex
	armed   bool
	need    time.Duration // pass holders whose lease has less left
	holder  int
	holding chan struct{} // closed when a worker waits at the gate
	open    chan struct{} // closed to let it go
}

// For is worker w's view of the gate.
func (g *holdGate) For(w int) workload.Gate { return workerGate{g: g, w: w} }

type workerGate struct {
	g *holdGate
	w int
}

func (wg workerGate) Wait(ctx context.Context) error { return wg.g.waitAs(ctx, wg.w) }

// Wait implements workload.Gate for a worker that does not say who it is.
func (g *holdGate) Wait(ctx context.Context) error { return g.waitAs(ctx, -1) }

func (g *holdGate) waitAs(ctx context.Context, w int) error {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return nil
	}
	if u := workload.LeaseUntil(ctx); g.need > 0 && !u.IsZero() && time.Until(u) < g.need {
		// Its lease ends before the long section would: holding it
		// would be a client pause, not a holder at work. The next one.
		g.mu.Unlock()
		return nil
	}
	g.armed = false
	g.holder = w
	close(g.holding)
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// arm makes the next Wait block (of a worker whose lease has need left, if
// need > 0); the returned channel is closed when it does.
func (g *holdGate) arm(need time.Duration) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
	g.need = need
	g.holder = -1
	g.holding = make(chan struct{})
	g.open = make(chan struct{})
	return g.holding
}

// held returns the worker waiting at the gate since the last arm (-1 if
// none, or it did not say).
func (g *holdGate) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holder
}

// release opens the gate (and disarms it).
func (g *holdGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

// whileHolding injects its fault at the worst moment: it waits (at most
// wait) until a worker holds the lock and sits in its critical section,
// then injects the fault — f, or pick(holder) for a fault aimed at the
// holder. The worker stays in its critical section for slow from the moment
// it got there, so the fault strikes under a live holder. That long critical
// section is recorded as a nemesis event named name. When no holder shows up
// in time, f is injected anyway and pick's fault is not.
type whileHolding struct {
	gate       *holdGate
	f          chaos.Fault
	pick       func(holder int) chaos.Fault
	wait, slow time.Duration
	// need, if positive, is the validity a holder's lease must have left
	// for the gate to hold it (a section meant to end inside the lease).
	need time.Duration
	rec  *history.Recorder
	name string

	mu    sync.Mutex
	timer *time.Timer
	open  bool
	hit   chaos.Fault // the fault injected, for Recover
}

func (w *whileHolding) String() string {
	if w.f != nil {
		return w.f.String()
	}
	return w.name
}

func (w *whileHolding) Inject(ctx context.Context) error {
	holding := w.gate.arm(w.need)
	t := time.NewTimer(w.wait)
	held := false
	select {
	case <-holding:
		held = true
		w.rec.NemesisStart(w.name).Ok()
		w.mu.Lock()
		w.open = true
		w.timer = time.AfterFunc(w.slow, w.release)
		w.mu.Unlock()
	case <-t.C:
		w.gate.release()
	case <-ctx.Done():
		w.gate.release()
	}
	t.Stop()
	f := w.f
	if w.pick != nil {
		f = nil
		if h := w.gate.held(); held && h >= 0 {
			f = w.pick(h)
		}
	}
	if f == nil {
		return nil
	}
	w.mu.Lock()
	w.hit = f
	w.mu.Unlock()
	return f.Inject(ctx)
}

func (w *whileHolding) release() {
	w.mu.Lock()
	open := w.open
	w.open = false
	w.mu.Unlock()
	// The end goes into the history before the gate lets the worker on,
	// so nothing the worker does next is recorded ahead of it.
	if open {
		w.rec.NemesisEnd(w.name).Ok()
	}
	w.gate.release()
}

func (w *whileHolding) Recover(ctx context.Context) error {
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	hit := w.hit
	w.hit = nil
	w.mu.Unlock()
	w.release()
	if hit == nil {
		return nil
	}
	return hit.Recover(ctx)
}

// gates chains gates: a worker passes each in turn.
type gates []workload.Gate

func (gs gates) Wait(ctx context.Context) error {
	for _, g := range gs {
		if err := g.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// handover pauses a holder past its lease and lets it go only once another
// worker holds the lock and sits in a long critical section of its own:
// the paused client's write, and its release, land while the next holder's
// lease is valid. A release that took away a lock it no longer owned would
// let a third client in beside that holder (lease exclusion).
//
// Inject arms the pause gate and waits (up to wait) for a holder to sit
// there; the rest runs on its own: after pause, the second gate is armed;
// once a worker sits there (or after a lease's wait), the paused holder is
// let go; the second holder stays for slow. Recover waits for that to end
// (it opens both gates when ctx ends first).
type handover struct {
	paused, next      *holdGate
	wait, pause, slow time.Duration
	rec               *history.Recorder

	done chan struct{}
	stop context.CancelFunc
}

func (h *handover) String() string { return "client-pause(holder)" }

func (h *handover) Inject(ctx context.Context) error {
	h.done = make(chan struct{})
	holding := h.paused.arm(0) // paused past its lease on purpose
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case <-holding:
	case <-t.C:
		h.paused.release()
		close(h.done)
		return nil
	case <-ctx.Done():
		h.paused.release()
		close(h.done)
		return nil
	}
	h.rec.NemesisStart(h.String()).Ok()
	// Inject's ctx ends when Inject returns; the sequence runs on until
	// Recover's ctx ends.
	ctx, h.stop = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(h.done)
		sleep(ctx, h.pause)
		second := h.next.arm(h.slow + h.slow/10)
		t := time.NewTimer(h.pause)
		got := false
		select {
		case <-second:
			got = true
			h.rec.NemesisStart(slowHolder).Ok()
		case <-t.C:
			h.next.release()
		case <-ctx.Done():
			h.next.release()
		}
		t.Stop()
		h.rec.NemesisEnd(h.String()).Ok()
		h.paused.release()
		if got {
			sleep(ctx, h.slow)
			h.next.release()
			h.rec.NemesisEnd(slowHolder).Ok()
		}
	}()
	return nil
}

func (h *handover) Recover(ctx context.Context) error {
	if h.done == nil {
		return nil
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		h.stop()
		<-h.done
	}
	if h.stop != nil {
		h.stop()
	}
	return nil
}

// sleep waits d or until ctx ends; it reports whether it slept the whole d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
