package matrix

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// everyone is a broken lock: it grants to everyone.
type everyone struct{ lease time.Duration }

type everyoneLease struct{ until time.Time }

func (e everyone) TryLock(context.Context) (workload.Lease, error) {
	return everyoneLease{time.Now().Add(e.lease)}, nil
}
func (e everyone) Lock(ctx context.Context) (workload.Lease, error) { return e.TryLock(ctx) }
func (everyoneLease) Unlock(context.Context) error                  { return nil }
func (everyoneLease) Token() int64                                  { return 0 }
func (l everyoneLease) Until() time.Time                            { return l.until }

// A mode expected safe that shows a violation makes Main fail with
// ErrViolation: the CLI's non-zero exit status.
func TestMainFailsOnViolation(t *testing.T) {
	needRedis(t)
	broken := Mode{ID: "broken", Summary: "grants to everyone", Masters: 1, Majority: true,
		Lock: func(p LockParams) (workload.Locker, func() error, error) { return everyone{p.LeaseTime}, nil, nil }}
	var out bytes.Buffer
	err := Main(t.Context(), Options{Modes: "broken", Scenarios: "baseline", Quick: true, Duration: 2500 * time.Millisecond, Parallel: 1},
		[]Mode{broken}, Scenarios, &out, io.Discard)
	if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), "broken × baseline") {
		t.Fatalf("Main: %v, want ErrViolation naming broken × baseline", err)
	}
	if !strings.Contains(out.String(), "**refuted**") {
		t.Errorf("table does not show the refuted row:\n%s", out.String())
	}
}

func TestOptionsConfig(t *testing.T) {
	c, err := Options{Modes: "single", Scenarios: "baseline,failover", Quick: true, Lease: 800 * time.Millisecond, Parallel: 3}.Config(Modes, Scenarios)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timing.Duration != Quick.Duration || c.Timing.Lease != 800*time.Millisecond || c.Parallel != 3 || len(c.Modes) != 1 || len(c.Scenarios) != 2 {
		t.Errorf("config %+v", c)
	}
	for _, o := range []Options{
		{Modes: "nope", Parallel: 1},
		{Quick: true, Duration: time.Second, Parallel: 1},
		{Quick: true, Parallel: 0},
	} {
		if _, err := o.Config(Modes, Scenarios); !errors.Is(err, ErrUsage) {
			t.Errorf("%+v: %v, want ErrUsage", o, err)
		}
	}
}
