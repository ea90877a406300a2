package matrix

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
	"github.com/quorumlock/quorumlock/quorum"
)

// nilMutex makes every acquisition panic inside the library, as a planted
// bug would: a nil Mutex dereferences its client.
type nilMutex struct{}

func (nilMutex) TryLock(ctx context.Context) (workload.Lease, error) {
	_, err := (*quorum.Mutex)(nil).TryLock(ctx)
	return nil, err
}

func (nilMutex) Lock(ctx context.Context) (workload.Lease, error) {
	_, err := (*quorum.Mutex)(nil).Lock(ctx)
	return nil, err
}

// A cell whose workers panic inside the library is a failed cell, judged
// with the panic's message; a cell the harness cannot set up is not
// judged (an error, no row).
func TestPanicFailsCell(t *testing.T) {
	needRedis(t)
	c := findCell(t, "redlock-3", "baseline")
	c.Mode.Lock = func(catalog.LockParams) (workload.Locker, func() error, error) { return nilMutex{}, nil, nil }
	res, _, err := RunCell(t.Context(), c, testTiming, 1, 0)
	if err != nil {
		t.Fatalf("RunCell = %v, want a judged row", err)
	}
	if res.Verdict != report.Refuted || !strings.Contains(res.Broken, "panic: workload: worker 0 panicked") ||
		!strings.Contains(res.Broken, "quorumlock/quorum.(*Mutex)") || len(Failures(report.Matrix{Results: []report.Row{res}})) != 1 {
		t.Errorf("row %s: %s; broken: %s — want a failed row naming the panic", res.Verdict, res.VerdictNote, res.Broken)
	}

	setup := errors.New("planted: the lock cannot be built")
	c.Mode.Lock = func(catalog.LockParams) (workload.Locker, func() error, error) { return nil, nil, setup }
	if _, _, err := RunCell(t.Context(), c, testTiming, 1, 0); !errors.Is(err, setup) {
		t.Errorf("RunCell with a harness failure = %v, want the error (no row)", err)
	}
}
