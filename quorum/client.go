package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/drift"
	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
	pubnode "github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/quorum/admin"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// Errors. Failures to obtain a lock wrap ErrNotObtained joined with one
// *NodeError per node that refused or failed, and the caller's context error
// when it ended the wait.
var (
	ErrNotObtained = multilock.ErrNotObtained
	// ErrTaken: a node refused because another owner holds the lock. A
	// failed TryLock wraps it (with ErrNotObtained) when the lock is taken,
	// not merely unreachable.
	ErrTaken   = multilock.ErrTaken
	ErrNotHeld = multilock.ErrNotHeld
	// ErrLeaseLost: the watchdog could not renew the lease on a quorum before
	// its validity ended, or a quorum said the lock is no longer ours. The
	// critical section is no longer protected.
	ErrLeaseLost = errors.New("quorumlock: lease lost")
	// ErrLeaseExpired: a lease with an explicit lease time reached its end
	// without Extend.
	ErrLeaseExpired = errors.New("quorumlock: lease expired")
	// ErrUnlocked: the lease was given back by Unlock.
	ErrUnlocked = errors.New("quorumlock: lease unlocked")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("quorumlock: client closed")
)

// Presets of WithPolicy (multilock's): All nodes must grant (MultiLock)
// or a Majority (RedLock, default).
var (
	All      = multilock.All
	Majority = multilock.Majority
)

type config struct {
	ttl            time.Duration
	policy         multilock.Policy
	factor         float64
	attemptTimeout time.Duration
	releaseTimeout time.Duration
	retryInterval  time.Duration
	fencing        bool
	fenceRetention time.Duration // WithFenceRetention
	clock          drift.Clock
	prefix         string
	noBatch        bool
	observer       observe.Observer // WithObserver, WithLogger; nil: none
	safety         safetyConfig     // WithReplicaAck, WithRestartDetection, WithPreflight
	label          string           // WithLabel
	logger         *slog.Logger     // WithLogger, for warnings outside the observer
	labelSet       bool
	dialCheck      time.Duration // WithDialCheck; 0: off
	functions      int8          // WithFunctions: 0 unset, 1 on, -1 off
	random         *lockedRand   // withRandom; nil: the default sources

	lock mutexConfig // set by the options of one lock (WithOwner, WithLeaseTime)
	// clientOnly and lockOnly name the first option given that applies
	// to the client only, or to one lock only: given at the other level it
	// is an error that names it.
	clientOnly, lockOnly string
}

// Option configures a client or one lock. Given to Dial, New or FromEnv an
// option sets the client's default; given to Mutex, MutexAll, RWMutex,
// FairMutex or Election it applies to that lock only. An option that
// cannot apply at the level it is given (WithKeyPrefix to one lock,
// WithOwner to the client) makes the constructor return an error naming
// it. WithTTL applies at both levels; WithOwner and WithLeaseTime to one
// lock only; every other option to the client only.
type Option func(*config)

// onlyClient records that the option name applies to the client only.
func (c *config) onlyClient(name string) {
	if c.clientOnly == "" {
		c.clientOnly = name
	}
}

// onlyLock records that the option name applies to one lock only.
func (c *config) onlyLock(name string) {
	if c.lockOnly == "" {
		c.lockOnly = name
	}
}

// lockOptions applies the options given to a lock's constructor.
func lockOptions(opts []Option) (mutexConfig, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.clientOnly != "" {
		return mutexConfig{}, fmt.Errorf("quorumlock: %s applies to the client, not to one lock", cfg.clientOnly)
	}
	cfg.lock.ttl = cfg.ttl
	return cfg.lock, nil
}

// WithTTL sets the lock TTL, the time a key lives on a node without
// renewal: leases without a fixed lease time (WithLeaseTime) are renewed by
// a watchdog every TTL/3, and a lost lease is noticed within the TTL. A
// short TTL hands a crashed holder's lock over sooner; a long one survives
// longer pauses and node stalls. Given to the client it is every lock's
// default (default 10s); given to one lock it overrides that for the
// lock's acquisitions only (default 0: the client's), and a lease time
// (WithLeaseTime) wins over it.
//
// With WithRestartDetection, give WithRestartDelay at least the longest
// per-lock TTL in use: its default waits the client's TTL.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithBatching turns on or off the coalescing of concurrent lock calls to
// one node into pipelines: a call that finds the node's connections busy
// waits for them and goes out with the others queued meanwhile, under its
// own deadline still. A lone caller never waits for a batch. Default on.
func WithBatching(on bool) Option {
	return func(c *config) { c.onlyClient("WithBatching"); c.noBatch = !on }
}

// WithPolicy sets the quorum policy: how many of n nodes may refuse or fail
// while the lock still counts as held, and how long each node's call may
// take. Default Majority (RedLock); All makes a MultiLock that needs every
// node.
func WithPolicy(p multilock.Policy) Option {
	return func(c *config) { c.onlyClient("WithPolicy"); c.policy = p }
}

// WithDriftFactor sets the clock drift factor subtracted from every validity
// (validity = ttl − elapsed − (ttl·factor + 2 ms)). Default 0.01.
func WithDriftFactor(f float64) Option {
	return func(c *config) { c.onlyClient("WithDriftFactor"); c.factor = f }
}

// WithAttemptTimeout bounds one acquisition attempt. Each node call gets
// the policy's LockWaitTime of what is left of it (Majority: a 1/n
// share), so a frozen node costs at most that. Default 250ms (50ms per node with 5 nodes).
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *config) { c.onlyClient("WithAttemptTimeout"); c.attemptTimeout = d }
}

// WithReleaseTimeout bounds each node's release and rollback call; they run
// on a fresh context, so a cancelled caller still cleans up. Default 250ms.
func WithReleaseTimeout(d time.Duration) Option {
	return func(c *config) { c.onlyClient("WithReleaseTimeout"); c.releaseTimeout = d }
}

// WithRetryInterval is the longest a waiting Lock sleeps between tries when
// no unlock message arrives (messages are lost when a pub/sub connection
// drops). The wait is jittered ±20% and cut short by the holder's remaining
// TTL. Default 500ms.
func WithRetryInterval(d time.Duration) Option {
	return func(c *config) { c.onlyClient("WithRetryInterval"); c.retryInterval = d }
}

// WithFencing turns fencing tokens on or off. On, every lease carries a
// token that strictly increases across holders: the highest counter among
// the granting nodes, written back set-if-greater on a quorum before the
// lease is handed out (one more round trip). Hand it to the resource
// (package guard) so a holder whose lease ended cannot overwrite a newer
// holder's work. Counters survive a node crash only with appendonly yes and
// appendfsync always. Default on; WithFencing(false) saves the round trip
// and Lease.Token is then 0.
func WithFencing(on bool) Option {
	return func(c *config) { c.onlyClient("WithFencing"); c.fencing = on }
}

// WithFenceRetention sets how long a node keeps a lock name's fencing
// counter after its last use (at least 99% of it: a Mutex's grants re-arm
// it at most once per hundredth of the retention), so per-entity names
// ("orders/<id>") do not grow the keyspace for ever. A counter that expired
// is re-created from the node's clock in microseconds (TIME), so tokens
// still increase, unless a node's clock is set back by more than 99% of
// the retention. A FairMutex's ticket counter is kept as long after its
// last ticket (and while anyone is in line). Default 7 days; at least 1
// hour, and at least 100 times the TTL.
func WithFenceRetention(d time.Duration) Option {
	return func(c *config) { c.onlyClient("WithFenceRetention"); c.fenceRetention = d }
}

// WithKeyPrefix sets the prefix of every key and channel. Default
// "quorumlock:".
func WithKeyPrefix(p string) Option {
	return func(c *config) { c.onlyClient("WithKeyPrefix"); c.prefix = p }
}

// Client locks on a set of independent Redis nodes. It is safe for concurrent
// use. Close it when done: it stops the pub/sub listeners and waits for
// calls still running on slow nodes. The go-redis clients stay yours.
type Client struct {
	nodes []*node.Node
	cfg   config
	id    string // newClientID: the prefix of the owners it makes
	seq   atomic.Uint64
	label string // recorded on the nodes for operators
	// labelDue is when the label is recorded next (unix ns; 0: at the
	// first lease; renewLabel).
	labelDue atomic.Int64
	wg       tracker // goroutines still running after a decision, waited for by Close
	// workers run the per-node calls of a fan-out on goroutines kept
	// between calls (their stacks stay grown); closed by Close.
	workers *multilock.Workers

	closed  atomic.Bool
	leaseMu sync.Mutex              // guards leases and the setting of closed
	leases  map[*Lease]struct{}     // held leases, ended by Close
	due     dueQueue                // the leases' renewals and expiries
	owned   []redis.UniversalClient // made by Dial: closed by Close

	mlOptsOnce sync.Once
	mlOpts     []multilock.Option // per name (buildMLOpts)
	mlOptsAll  []multilock.Option // over the names of a MutexAll
	// mlOptsFenced: mlOpts with fencing on, for elections.
	mlOptsFenced []multilock.Option
	obsStop      observerStop // ends Election.Observe goroutines
	safety       safetyState  // state of the safety options
	admin        *admin.Tools // the operator's tools (Admin)
	line         waitLine     // where a release wakes this client's Mutex waiters
}

// New returns a client over the given go-redis clients, one per independent
// Redis deployment (standalone, Sentinel or Cluster). The clients should have
// ContextTimeoutEnabled: true (node.Options shows the settings); otherwise
// every call is wrapped so deadlines still hold. New connects to every node
// in parallel before it returns (at most 1 s in all; a node that does not
// answer is not an error), so the first attempt finds its connections ready.
func New(clients []redis.UniversalClient, opts ...Option) (*Client, error) {
	cfg := config{
		ttl:            10 * time.Second,
		policy:         Majority,
		factor:         drift.DefaultFactor,
		attemptTimeout: 250 * time.Millisecond,
		releaseTimeout: 250 * time.Millisecond,
		retryInterval:  500 * time.Millisecond,
		clock:          drift.System,
		prefix:         node.DefaultPrefix,
		fencing:        true,
		fenceRetention: node.DefaultFenceRetention,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lockOnly != "" {
		return nil, fmt.Errorf("quorumlock: %s applies to one lock, not to the client", cfg.lockOnly)
	}
	if err := cfg.validate(len(clients)); err != nil {
		return nil, err
	}
	label, err := clientLabel(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, id: newClientID(cfg.random), label: label, workers: multilock.NewWorkers(256)}
	if c.nodes, err = newNodes(clients, cfg); err != nil {
		return nil, err
	}
	c.line.channel = c.nodes[0].WaitChannel(c.id)
	c.admin = admin.New(node.PublicNodes[*pubnode.Node](c.nodes), admin.Config{
		Policy:           cfg.policy,
		TTL:              cfg.ttl,
		AttemptTimeout:   cfg.attemptTimeout,
		ReleaseTimeout:   cfg.releaseTimeout,
		Prefix:           cfg.prefix,
		Fencing:          cfg.fencing,
		WaitReplicas:     cfg.safety.waitReplicas,
		RestartDetection: cfg.safety.restart != restartOff,
	})
	if err := c.initSafety(); err != nil {
		return nil, err
	}
	if cfg.dialCheck > 0 {
		if err := c.dialCheck(cfg.dialCheck); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	_ = c.warm(ctx) // best effort: a node that is down must not fail New
	c.probePersistence(ctx)
	cancel()
	return c, nil
}

// validate checks the options New was given, for n nodes.
func (cfg config) validate(n int) error {
	if n == 0 {
		return errors.New("quorumlock: no nodes given; pass one go-redis client per independent Redis deployment (5 survive 2 failures)")
	}
	if f := cfg.factor; f < 0 || f >= 1 || f != f {
		return fmt.Errorf("quorumlock: WithDriftFactor(%v): the factor must be in [0, 1); default %v", f, drift.DefaultFactor)
	}
	if err := checkMaxTTL("WithTTL", cfg.ttl); err != nil {
		return fmt.Errorf("%w: restart detection keeps a restarted node out for a TTL", err)
	}
	if err := drift.Check(cfg.ttl, cfg.factor); err != nil {
		return optionErr(fmt.Sprintf("WithTTL(%v)", cfg.ttl), err)
	}
	if cfg.policy == nil {
		return errors.New("quorumlock: WithPolicy(nil): give a policy, e.g. quorum.Majority (the default) or quorum.All")
	}
	if l := cfg.policy.FailedLocksLimit(n); l < 0 || l >= n {
		return fmt.Errorf("quorumlock: WithPolicy: the policy allows %d failed nodes of %d; it must be in [0, %d]", l, n, n-1)
	}
	for _, d := range []struct {
		option string
		v      time.Duration
	}{{"WithAttemptTimeout", cfg.attemptTimeout}, {"WithReleaseTimeout", cfg.releaseTimeout}, {"WithRetryInterval", cfg.retryInterval}} {
		if d.v <= 0 {
			return fmt.Errorf("quorumlock: %s(%v): must be positive", d.option, d.v)
		}
	}
	if cfg.dialCheck < 0 {
		return fmt.Errorf("quorumlock: WithDialCheck(%v): must not be negative (0 turns the check off)", cfg.dialCheck)
	}
	if cfg.clock == nil {
		return errors.New("quorumlock: nil clock")
	}
	if r := cfg.fenceRetention; r < node.MinFenceRetention || r < 100*cfg.ttl {
		return fmt.Errorf("quorumlock: WithFenceRetention %v is too short: keep fencing counters at least %v and 100 times the TTL (%v), far longer than any lease", r, node.MinFenceRetention, 100*cfg.ttl)
	}
	return nil
}

// newNodes makes one node per go-redis client, refusing a nil client and
// two nodes that are one deployment.
func newNodes(clients []redis.UniversalClient, cfg config) ([]*node.Node, error) {
	var nodes []*node.Node
	seenClient := map[redis.UniversalClient]int{}
	seenName := map[string]int{}
	for i, rc := range clients {
		if rc == nil {
			return nil, fmt.Errorf("quorumlock: node %d: nil redis client", i)
		}
		if j, ok := seenClient[rc]; ok {
			return nil, fmt.Errorf("quorumlock: nodes %d and %d are the same client; every node must be a distinct Redis deployment", j, i)
		}
		seenClient[rc] = i
		nd, err := node.New(rc, append([]node.Option{node.WithPrefix(cfg.prefix), node.WithBatching(!cfg.noBatch), node.WithOnePipeline(len(clients) > 1), node.WithFenceRetention(cfg.fenceRetention)}, cfg.functionsOptions()...)...)
		if err != nil {
			return nil, fmt.Errorf("quorumlock: node %d: %w", i, err)
		}
		if j, ok := seenName[nd.Name()]; ok {
			return nil, fmt.Errorf("quorumlock: nodes %d and %d both point at %s; every node must be a distinct Redis deployment", j, i, nd.Name())
		}
		seenName[nd.Name()] = i
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

// Admin returns the operator's tools over the client's nodes: the
// preflight Check, Inspect and List of locks, ForceUnlock (package admin).
// A lock user does not need them.
func (c *Client) Admin() *admin.Tools { return c.admin }

// Close ends the client. Every lease it still holds ends first: its Done
// closes, its Context is cancelled and its Err wraps ErrClosed, its
// watchdog stops, and its lock is released on every node that answers
// within the release timeout (a node that does not keeps its share until
// the TTL). Then Close stops the pub/sub listeners and waits for node calls
// that were left running after a decision (each ends by its own deadline).
// Lock and TryLock after Close return ErrClosed; Unlock of a lease Close
// ended returns its Err. Close also removes the client's label from every
// node (WithLabel), so nothing of the client stays there. A second Close
// returns nil.
func (c *Client) Close() error {
	leases, first := c.markClosed()
	if !first {
		return nil
	}
	c.endLeases(leases)
	c.due.stop()
	// In parallel: a node that is frozen while its pub/sub connection is
	// being set up holds its Close for the go-redis read timeouts.
	c.stopObservers() // they are counted in wg
	errs := fanout.All(len(c.nodes), func(i int) error { return c.nodes[i].Close() })
	c.wg.Wait()
	// After the wait: a label being recorded has landed and is removed too.
	// A node that does not answer is not Close's failure: its label expires.
	_ = c.dropLabel()
	c.workers.Close()
	if len(c.owned) > 0 {
		errs = append(errs, closeAll(c.owned))
	}
	return oneline.Join(errs...)
}

// next is a new identity (owner or attempt), unique across clients: the
// client's UUID and a counter, built in one allocation.
func (c *Client) next() string {
	var buf [64]byte
	b := append(buf[:0], c.id...)
	b = append(b, ':')
	return string(strconv.AppendUint(b, c.seq.Add(1), 36))
}
