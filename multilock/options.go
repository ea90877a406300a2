package multilock

import (
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

type config struct {
	policy         Policy
	factor         float64
	clock          drift.Clock
	releaseTimeout time.Duration
	fencing        bool
	tracker        Tracker
	workers        *Workers
	attemptTimeout time.Duration
}

// Option configures a MultiLock.
type Option func(*config)

// WithPolicy sets the policy; default Majority.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithDriftFactor sets the clock drift factor; default drift.DefaultFactor (0.01).
func WithDriftFactor(f float64) Option { return func(c *config) { c.factor = f } }

// WithClock sets the monotonic clock; default drift.System.
func WithClock(clk drift.Clock) Option { return func(c *config) { c.clock = clk } }

// WithReleaseTimeout bounds each sub-lock's release, rollback and late clean-up
// call; they run on a fresh context so a cancelled caller still cleans up.
// Default 250 ms.
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }

// WithAttemptTimeout bounds each Acquire, all its phases, by d from its
// start, on top of its context's deadline. Acquire reads the clock for
// its start anyway, so the bound costs no reading of its own (and, for
// DeadlineBound sub-locks, no allocation). Default 0: only the context's.
func WithAttemptTimeout(d time.Duration) Option { return func(c *config) { c.attemptTimeout = d } }

// WithFencing makes Acquire take a fencing token: the highest counter the
// granting sub-locks report, written back set-if-greater on a quorum of them
// before the acquisition counts. Sub-locks must implement Fencer. Default off.
func WithFencing(on bool) Option { return func(c *config) { c.fencing = on } }

// Tracker counts goroutines: Add(1) before one starts, Done when it ends.
// A *sync.WaitGroup is one, for an owner whose Wait never runs while
// acquisitions may still start; an owner that closes while others may
// still call (quorum.Client) needs one that allows Add during Wait.
type Tracker interface {
	Add(delta int)
	Done()
}

// WithTracker counts every goroutine the MultiLock starts in t, including
// calls still running after a decision was made early (they end by their own
// deadline). An owner that must not leave goroutines behind waits on t.
func WithTracker(t Tracker) Option { return func(c *config) { c.tracker = t } }
