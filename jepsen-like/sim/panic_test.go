package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/quorum"
)

// panicking makes every acquisition panic: inside the library (a nil
// Mutex dereferences its client), as a planted bug would, or in the
// harness's own code.
type panicking struct{ harness bool }

func (p panicking) TryLock(ctx context.Context) (workload.Lease, error) { return p.Lock(ctx) }

func (p panicking) Lock(ctx context.Context) (workload.Lease, error) {
	if p.harness {
		panic("planted: a bug of the harness")
	}
	_, err := (*quorum.Mutex)(nil).Lock(ctx)
	return nil, err
}

// A run whose workers panic inside the library is a failed run, judged
// with the panic's message; a panic of the harness leaves it unjudged
// (an error).
func TestPanicFailsRun(t *testing.T) {
	c := CellRun{Mode: mode(t, "redlock-3"), Scenario: "baseline", Seed: 1, Timing: Timing{Duration: time.Second}}
	c.Mode.Lock = func(catalog.LockParams) (workload.Locker, func() error, error) { return panicking{}, nil, nil }
	v := Run(t, c)
	if !v.Bug() || !strings.Contains(v.Result.Broken, "panic: workload: worker 0 panicked") || !strings.Contains(v.Result.Broken, "quorumlock/quorum.(*Mutex)") {
		t.Errorf("%v: want a failed run naming the panic", v)
	}

	c.Mode.Lock = func(catalog.LockParams) (workload.Locker, func() error, error) {
		return panicking{harness: true}, nil, nil
	}
	var err error
	synctest.Test(t, func(t *testing.T) { _, err = Simulate(c) })
	var pe *workload.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "a bug of the harness") {
		t.Errorf("Simulate with a harness panic = %v, want the panic as an error", err)
	}
}
