package chaos

import (
	"context"
	"sync"
)

// ClientPause is a fault in the client rather than the servers: a holder
// that stops (a GC pause, a VM migration, a SIGSTOP) for longer than its
// lease and then carries on as if it still held the lock. The workload
// consults it: a worker calls Wait at the point where a pause would hurt
// (after acquiring, before writing); Wait returns at once while the fault is
// not injected and blocks while it is. Hold it longer than the lock's TTL to
// make the lease expire under the paused holder.
//
// The zero value is ready to use (open). Safe for concurrent use.
type ClientPause struct {
	// Name labels the fault ("client-pause(<Name>)"), e.g. the worker it
	// pauses.
	Name string

	mu     sync.Mutex
	closed chan struct{} // non-nil while paused; closed on Recover
}

func (g *ClientPause) String() string { return "client-pause(" + g.Name + ")" }

// Inject starts the pause: Wait blocks from now on.
func (g *ClientPause) Inject(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
	return nil
}

// Recover ends the pause and releases every waiter.
func (g *ClientPause) Recover(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
	return nil
}

// Paused reports whether the pause is in effect.
func (g *ClientPause) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed != nil
}

// Wait returns nil at once when not paused; otherwise it blocks until
// Recover (nil) or until ctx ends (ctx.Err()).
func (g *ClientPause) Wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
