package matrix

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// stall freezes a client between a node's grant and its use: once armed,
// the first worker whose connection receives a grant (an acquire the node
// answered with "yours") is held there for d — as a GC pause or a
// descheduled process would hold it after the reply arrived and before the
// lock measured how long the acquisition took. Every reply that worker
// receives until the stall ends waits too. The lock then finds an
// acquisition slower than its TTL: the keys it got have expired on the
// nodes, and the validity check must refuse the grant.
//
// It is a go-redis hook per worker (For); the workers share its state.
type stall struct {
	d   time.Duration
	rec *history.Recorder

	mu     sync.Mutex
	armed  bool
	who    int
	until  time.Time
	caught chan struct{} // closed when an armed stall caught a grant
	ended  chan struct{} // closed when the caught grant's stall ended
}

// arm makes the next grant stall; the channel is closed when one does.
func (s *stall) arm() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = true
	s.caught, s.ended = make(chan struct{}), make(chan struct{})
	return s.caught
}

// over returns a channel closed when the stall the last arm caught has
// ended (its worker resumed).
func (s *stall) over() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// disarm cancels an arm that caught nothing.
func (s *stall) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
}

// For is worker w's hook.
func (s *stall) For(w int) redis.Hook { return stallHook{s: s, w: w} }

// hold stalls worker w if a grant it just received is to be held.
func (s *stall) hold(w int) {
	s.mu.Lock()
	now := time.Now()
	first := false
	switch {
	case s.armed:
		s.armed, s.who, s.until, first = false, w, now.Add(s.d), true
		close(s.caught)
	case s.who != w || !now.Before(s.until):
		s.mu.Unlock()
		return
	}
	until, ended := s.until, s.ended
	s.mu.Unlock()
	name := fmt.Sprintf("client-stall(worker %d)", w)
	if first {
		s.rec.NemesisStart(name).Ok()
	}
	time.Sleep(time.Until(until))
	if first {
		s.rec.NemesisEnd(name).Ok()
		close(ended)
	}
}

type stallHook struct {
	s *stall
	w int
}

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && isGrant(cmd) {
			h.s.hold(h.w)
		}
		return err
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() == nil && isGrant(c) {
				h.s.hold(h.w)
				break
			}
		}
		return err
	}
}

// isGrant recognises a node's "yours" to an acquire, as the wire shows it:
// SET NX answered OK (as SetNX's BoolCmd or Do's Cmd), or a lock script answered an array led by 1 ({1,
// fence}; a refusal is {0, pttl}; releases and extends answer a number).
func isGrant(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.BoolCmd:
		return c.Name() == "set" && c.Val()
	case *redis.Cmd:
		if c.Name() == "set" {
			// The lock's batched fast path sends SET NX through Do (a
			// generic Cmd), alone or in a pipeline.
			return c.Val() == "OK"
		}
		if n := c.Name(); n != "evalsha" && n != "eval" && n != "evalsha_ro" && n != "fcall" {
			return false
		}
		v, ok := c.Val().([]any)
		if !ok || len(v) == 0 {
			return false
		}
		first, ok := v[0].(int64)
		return ok && first == 1
	}
	return false
}

// stallFault arms the stall and, once it caught a grant, makes the next
// worker to hold the lock (after the stalled one's keys expired) stay in
// its critical section for hold: the stalled client's Lock returns while
// that one holds, so a lock that hands out the stale grant shows two
// tenures at once.
type stallFault struct {
	s      *stall
	wait   time.Duration
	next   *whileHolding
	caught bool // a grant was stalled: the strike injected its fault
}

// missed: no attempt brought a grant within wait (on a loaded machine a
// five-node attempt through the proxies sometimes does not), so nothing
// was stalled and the strike does not count toward the series' ten.
func (f *stallFault) missed() bool { return !f.caught }

func (f *stallFault) String() string { return "client-stall" }

func (f *stallFault) Inject(ctx context.Context) error {
	caught := f.s.arm()
	t := time.NewTimer(f.wait)
	defer t.Stop()
	select {
	case <-caught:
		f.caught = true
	case <-t.C:
		f.s.disarm()
		return nil
	case <-ctx.Done():
		f.s.disarm()
		return nil
	}
	return f.next.Inject(ctx)
}

// Recover ends the strike once the stalled worker resumed: a strike whose
// holder was done first (the stalled attempt had lost anyway, and another
// worker already held the lock) would otherwise let the next strike's
// stall start inside this one's, and the two would count as one event.
func (f *stallFault) Recover(ctx context.Context) error {
	f.s.disarm()
	err := f.next.Recover(ctx)
	if f.caught {
		select {
		case <-f.s.over():
		case <-ctx.Done():
		}
	}
	return err
}
