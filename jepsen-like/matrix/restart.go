package matrix

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

// crashMinorityPlan is crash-restart-minority: again and again, while a
// worker holds the lock, a rolling restart without persistence — a
// minority of the lock nodes killed and restarted at once, a quarter of
// a lease later the next minority — and the holder works 3½ leases with
// its lease renewed by the watchdog (see the catalog's scenario for why
// both minorities, and why that long).
func crashMinorityPlan(c *cell) (plan, error) {
	t := c.timing
	g := &holdGate{}
	nodes := c.lockNodes()
	k := minority(len(nodes))
	slow, gap := t.Lease*7/2, t.Lease/4
	p := c.holdingSeries(g, func(int) (chaos.Fault, time.Duration) {
		r := &rolling{gap: gap, steps: []chaos.Fault{
			c.faults(crashes(nodes[:k], true)...),
			c.faults(crashes(nodes[k:2*k], true)...),
		}}
		// The strike is held from when the roll is done, which is at
		// least gap after the holder was caught: slow − gap more keeps
		// it until the holder's section ends, not a gap past it.
		return c.holdOn(g, slow, r, nil), slow - gap
	})
	p.watchdog = true
	return p, nil
}

// rolling injects its steps one after the other, gap apart (each step's
// Inject returns once it is in place: a crash with restart, once the node
// is back), and recovers every step it injected.
type rolling struct {
	steps []chaos.Fault
	gap   time.Duration

	mu   sync.Mutex
	done int // steps injected (also when their Inject failed)
}

func (r *rolling) String() string {
	names := make([]string, len(r.steps))
	for i, s := range r.steps {
		names[i] = s.String()
	}
	return "rolling(" + strings.Join(names, " then ") + ")"
}

func (r *rolling) Inject(ctx context.Context) error {
	for i, s := range r.steps {
		if i > 0 && !sleep(ctx, r.gap) {
			return ctx.Err()
		}
		r.mu.Lock()
		r.done = i + 1
		r.mu.Unlock()
		if err := s.Inject(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (r *rolling) Recover(ctx context.Context) error {
	r.mu.Lock()
	n := r.done
	r.done = 0
	r.mu.Unlock()
	var errs []error
	for _, s := range r.steps[:n] {
		errs = append(errs, s.Recover(ctx))
	}
	return errors.Join(errs...)
}
