package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// safetyConfig holds the safety options (WithReplicaAck, WithRestartDetection,
// WithPreflight). The zero value is the default: restart detection for the
// nodes that lack fsync-always persistence, the rest off. A node that needs
// none of them gets its lock calls exactly as without them: no wrapper, no
// extra command.
type safetyConfig struct {
	wait         bool
	waitReplicas int
	waitTimeout  time.Duration

	restart      restartMode
	restartDelay time.Duration // 0: the largest TTL in use

	preflight       bool
	preflightRefuse admin.Severity
}

// WithPreflight makes New run the preflight check (admin.Tools.Check,
// bounded by admin.PreflightTimeout) and refuse the setup with an
// *admin.PreflightError when a finding is at refuse or worse
// (admin.Problem: a node counted twice, a replica given as a node,
// evictable lock keys; admin.Warning also refuses nodes without
// persistence). Default off.
func WithPreflight(refuse admin.Severity) Option {
	return func(c *config) {
		c.onlyClient("WithPreflight")
		c.safety.preflight, c.safety.preflightRefuse = true, refuse
	}
}

// safetyState is the per-client state the safety options keep.
type safetyState struct {
	restart *restartState // nil: restart detection off
	// persist is what each node said of its persistence (node.Persistence,
	// as int32), asked at New's warm-up or with a node's first gated call.
	// Under restartAuto a Persistent node is not checked.
	persist []atomic.Int32
	// noGate marks nodes the gate cannot serve (Ring clients) under
	// restartAuto: they go without restart detection.
	noGate []bool
}

// initSafety validates the safety options and sets up their state; it runs
// at the end of New, when the nodes are known.
func (c *Client) initSafety() error {
	s := &c.cfg.safety
	if s.wait && s.waitReplicas < 1 {
		return fmt.Errorf("quorumlock: WithReplicaAck(%d, …): the replica count must be at least 1", s.waitReplicas)
	}
	if s.wait {
		budget := c.cfg.policy.LockWaitTime(c.cfg.attemptTimeout, len(c.nodes))
		if s.waitTimeout <= 0 || s.waitTimeout >= budget {
			return fmt.Errorf("quorumlock: WithReplicaAck timeout %v must be positive and below the per-node budget %v (the attempt timeout %v shared by the policy over %d nodes); raise WithAttemptTimeout or lower the WAIT timeout",
				s.waitTimeout, budget, c.cfg.attemptTimeout, len(c.nodes))
		}
	}
	if s.restartDelay < 0 {
		return fmt.Errorf("quorumlock: WithRestartDelay(%v): the delay must not be negative (0: the largest TTL in use)", s.restartDelay)
	}
	if s.restart != restartOff {
		c.safety.restart = newRestartState(c.cfg.ttl, s.restartDelay)
	}
	c.safety.persist = make([]atomic.Int32, len(c.nodes))
	c.safety.noGate = make([]bool, len(c.nodes))
	for i, n := range c.nodes {
		if _, ring := n.Client().(*redis.Ring); ring {
			if s.wait || s.restart == restartOn {
				return fmt.Errorf("quorumlock: node %d is a Ring client; WithReplicaAck and WithRestartDetection need a standalone, Sentinel or Cluster client per node", i)
			}
			c.safety.noGate[i] = true
		}
	}
	if s.preflight {
		return c.admin.Preflight(s.preflightRefuse)
	}
	return nil
}

// gated reports whether node i's calls go through the safety gate.
func (c *Client) gated(i int) bool {
	return c.cfg.safety.waitReplicas > 0 || c.detects(i)
}

// detects reports whether restart detection applies to node i now: always
// under WithRestartDetection(true), never under WithRestartDetection(false), and by
// default while the node is not known to be persistent.
func (c *Client) detects(i int) bool {
	switch c.cfg.safety.restart {
	case restartOn:
		return true
	case restartOff:
		return false
	}
	return !c.safety.noGate[i] && node.Persistence(c.safety.persist[i].Load()) != node.Persistent
}

// askPersistence reports whether node i's persistence is still to be
// learnt (restartAuto, not yet answered).
func (c *Client) askPersistence(i int) bool {
	return c.cfg.safety.restart == restartAuto && !c.safety.noGate[i] &&
		node.Persistence(c.safety.persist[i].Load()) == node.PersistenceUnknown
}

// askWithAcquire reports whether a gated acquire on node i asks its
// persistence in the same round trip: not on a Cluster, where that reaches
// one server only (probePersistence asks them all).
func (c *Client) askWithAcquire(i int) bool {
	return c.askPersistence(i) && !c.isCluster(i)
}

func (c *Client) isCluster(i int) bool {
	_, ok := c.nodes[i].Client().(*redis.ClusterClient)
	return ok
}

// notePersistence records what node i said of its persistence.
func (c *Client) notePersistence(i int, p node.Persistence) {
	if p != node.PersistenceUnknown {
		c.safety.persist[i].Store(int32(p))
	}
}

// probePersistence asks every node that restartAuto needs to know about
// whether it is persistent (one CONFIG GET each, in parallel; New's
// warm-up; a Cluster node asks each of its servers). A standalone node
// that does not answer is asked again with its first gated lock call; a
// Cluster that does not stays under restart detection.
func (c *Client) probePersistence(ctx context.Context) {
	fanout.All(len(c.nodes), func(i int) error {
		if !c.askPersistence(i) {
			return nil
		}
		p, err := c.nodes[i].Persistence(ctx)
		c.notePersistence(i, p)
		return err
	})
}

// checkedLocker is a node lock that can ask checks in the same round trip
// (node.Lock, node.RWLock).
type checkedLocker interface {
	multilock.Locker
	multilock.Fencer
	AcquireChecked(ctx context.Context, ttl time.Duration, chk node.Checks) (bool, time.Duration, int64, node.Checked, error)
	ExtendChecked(ctx context.Context, ttl time.Duration, chk node.Checks) (bool, node.Checked, error)
	FenceChecked(ctx context.Context, token int64, chk node.Checks) (bool, node.Checked, error)
}

// gateLock puts node i's lock l behind the safety gate when a safety option
// is on; without one, l goes to the multilock as it is.
func (c *Client) gateLock(i int, l checkedLocker) multilock.Locker {
	if !c.gated(i) {
		return l
	}
	_, cluster := c.nodes[i].Client().(*redis.ClusterClient)
	return &gate{c: c, i: i, l: l, cluster: cluster}
}

// gate wraps one node's lock of one attempt: a grant counts as a vote only
// if the node passes the safety checks asked in the same round trip (WAIT
// acknowledged by enough replicas; the node did not restart recently). A
// grant that fails them is given back at once and reported as an error with
// the reason (*waitError, *restartError), so the lease report says why the
// node did not vote.
type gate struct {
	c       *Client
	i       int
	l       checkedLocker
	cluster bool
}

func (g *gate) String() string { return fmt.Sprint(g.l) }

func (g *gate) checks(server bool) node.Checks {
	s := g.c.cfg.safety
	return node.Checks{Replicas: s.waitReplicas, WaitTimeout: s.waitTimeout,
		Server: server && g.c.detects(g.i), Persistence: server && g.c.askWithAcquire(g.i)}
}

func (g *gate) Acquire(ctx context.Context, ttl time.Duration) (bool, time.Duration, int64, error) {
	rs := g.c.safety.restart
	if !g.c.detects(g.i) {
		rs = nil
	}
	if rs != nil {
		rs.noteTTL(ttl)
		if !g.cluster {
			// Known to be young: no need to ask, it cannot vote yet.
			if err := rs.pending(g.i, g.c.cfg.clock.Now()); err != nil {
				return false, 0, 0, err
			}
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		// The attempt is cancelled once the quorum is decided; this call
		// goes on to its own deadline instead, so that a node still in WAIT
		// says why its vote did not count, and a grant the gate refuses is
		// given back by the gate (multilock counts the straggler).
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), dl)
		defer cancel()
	}
	granted, remaining, fence, chk, err := g.l.AcquireChecked(ctx, ttl, g.checks(true))
	if err != nil {
		return granted, remaining, fence, err
	}
	g.c.notePersistence(g.i, chk.Persistence)
	if rs != nil && g.c.detects(g.i) {
		server := ""
		if g.cluster {
			server = chk.Server
		}
		if rerr := rs.observe(g.i, server, g.c.cfg.clock.Now(), chk.RunID, chk.Uptime); rerr != nil {
			if granted {
				g.giveBack()
			}
			return false, 0, 0, rerr
		}
	}
	if granted && chk.Acked >= 0 && chk.Acked < g.c.cfg.safety.waitReplicas {
		g.giveBack()
		return false, 0, 0, &waitError{Want: g.c.cfg.safety.waitReplicas, Acked: chk.Acked, Timeout: chk.Timeout}
	}
	return granted, remaining, fence, nil
}

// giveBack releases this attempt's share on the node after the gate refused
// its vote, on a fresh context bounded by the release timeout.
func (g *gate) giveBack() {
	ctx, cancel := context.WithTimeout(context.Background(), g.c.cfg.releaseTimeout)
	defer cancel()
	_, _ = g.Rollback(ctx)
}

// Rollback passes on the node lock's multilock.Rollbacker (a failed
// attempt's give-back tells no waiter), else releases.
func (g *gate) Rollback(ctx context.Context) (bool, error) {
	if r, ok := g.l.(multilock.Rollbacker); ok {
		return r.Rollback(ctx)
	}
	return g.l.Release(ctx)
}

func (g *gate) Extend(ctx context.Context, ttl time.Duration) (bool, error) {
	ok, chk, err := g.l.ExtendChecked(ctx, ttl, g.checks(false))
	if err != nil || !ok {
		return ok, err
	}
	if chk.Acked >= 0 && chk.Acked < g.c.cfg.safety.waitReplicas {
		// The extension may not survive a failover of this node.
		return false, &waitError{Want: g.c.cfg.safety.waitReplicas, Acked: chk.Acked, Timeout: chk.Timeout}
	}
	return true, nil
}

func (g *gate) Release(ctx context.Context) (bool, error) { return g.l.Release(ctx) }

// KeepsFence passes on the node lock's multilock.FenceKeeper: a counter a
// counted grant reported is stored there (under WithReplicaAck, acknowledged by
// the replicas in the grant's round trip).
func (g *gate) KeepsFence() bool {
	k, ok := g.l.(multilock.FenceKeeper)
	return ok && k.KeepsFence()
}

func (g *gate) Fence(ctx context.Context, token int64) (bool, error) {
	ok, chk, err := g.l.FenceChecked(ctx, token, g.checks(false))
	if err != nil || !ok {
		return ok, err
	}
	if chk.Acked >= 0 && chk.Acked < g.c.cfg.safety.waitReplicas {
		// A counter a failover can lose must not count for the token.
		return false, &waitError{Want: g.c.cfg.safety.waitReplicas, Acked: chk.Acked, Timeout: chk.Timeout}
	}
	return true, nil
}

// voteReason says in words why a node did or did not vote.
func voteReason(o multilock.Outcome) string {
	var we *waitError
	var re *restartError
	switch {
	case o.Granted:
		return "granted"
	case !o.Answered:
		// Report is of an obtained lease: a quorum granted first.
		return "not needed: a quorum granted before it answered"
	case errors.As(o.Err, &we):
		return "not counted: " + we.Error()
	case errors.As(o.Err, &re):
		return "not counted: " + re.Error()
	case o.Err != nil:
		return "error: " + o.Err.Error()
	case o.Remaining > 0:
		return fmt.Sprintf("refused: held by another owner for %v more", o.Remaining.Round(time.Millisecond))
	}
	return "refused: held by another owner"
}
