package quorum

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNodeRestarted: a node restarted recently (its run_id changed, or it has
// been up for less than the restart delay), so it does not vote yet.
var ErrNodeRestarted = errors.New("quorumlock: node restarted recently")

// restartError is why a node did not vote under WithRestartDetection. It
// unwraps to ErrNodeRestarted.
type restartError struct {
	// RunID is the node's current run_id; PrevRunID the one seen before it,
	// when the run_id changed ("" for a node that is only young).
	RunID, PrevRunID string
	// Uptime is the node's uptime: what it last said (whole seconds), plus
	// the time since it said so.
	Uptime time.Duration
	// Delay is the restart delay: a restarted node sits out this long.
	Delay time.Duration
	// Left is how long it still sits out.
	Left time.Duration
}

func (e *restartError) Error() string {
	left, up := e.Left.Round(time.Millisecond), e.Uptime.Round(time.Millisecond)
	if e.PrevRunID != "" {
		return fmt.Sprintf("restarted (run_id %.8s… was %.8s…), up %v: no vote for %v more (restart delay %v)", e.RunID, e.PrevRunID, up, left, e.Delay)
	}
	return fmt.Sprintf("up only %v, less than the restart delay %v: no vote for %v more", up, e.Delay, left)
}

func (e *restartError) Unwrap() error { return ErrNodeRestarted }

// SitsOut tells the lock's error summary that the node answered and sits
// out (multilock.SitsOut), rather than failed.
func (e *restartError) SitsOut() bool { return true }

// restartMode is how restart detection applies (WithRestartDetection).
type restartMode int8

const (
	restartAuto restartMode = iota // default: nodes without fsync-always persistence
	restartOn                      // WithRestartDetection(true): every node
	restartOff                     // WithRestartDetection(false)
)

// WithRestartDetection(true) makes the client enforce a delayed restart
// (the RedLock paper's remedy for nodes that lose their keys in a crash)
// on every node: a node whose run_id changed since this client last saw
// it, or that has been up for less than the delay (WithRestartDelay), does
// not vote until the delay has passed. A node that restarted empty could
// otherwise grant a lock another client still holds there. Each acquire
// asks INFO server in the same round trip as the acquire script (no extra
// round trip; a node known to be sitting out is not asked at all).
//
// WithRestartDetection(false) turns it off, also for nodes without
// persistence: a node that crashed and restarted empty votes at once and
// may grant a lock another client still holds. Use it only when every
// node has appendonly yes with appendfsync always, or when losing mutual
// exclusion across a crash is acceptable; admin.Tools.Check then warns
// about each node without persistence.
//
// Default on, per node: without this option restart detection applies to
// each node that does not say appendonly yes and appendfsync always
// (CONFIG GET, asked once when the client connects; a node that refuses
// CONFIG counts as not persistent; a Cluster node is persistent when every
// master and replica it has then says so), and persistent nodes vote at
// once with no extra command.
//
// It protects mutual exclusion across a crash without persistence. It does
// not keep fencing counters monotonic: for those use appendonly yes with
// appendfsync always (see docs/safety.md).
func WithRestartDetection(on bool) Option {
	return func(c *config) {
		c.onlyClient("WithRestartDetection")
		c.safety.restart = restartOff
		if on {
			c.safety.restart = restartOn
		}
	}
}

// WithRestartDelay sets how long a restarted node sits out under restart
// detection. Default 0: the largest TTL in use, the client TTL or the
// longest lock TTL or lease time this client has acquired with, whichever
// is larger. Set it when other processes use longer TTLs.
func WithRestartDelay(d time.Duration) Option {
	return func(c *config) { c.onlyClient("WithRestartDelay"); c.safety.restartDelay = d }
}

// restartKey names one server: a node, or on a Cluster node the master of a
// slot (its address).
type restartKey struct {
	node   int
	server string
}

type nodeLife struct {
	runID   string
	prev    string    // the run_id before the last change
	votesAt time.Time // on the client's clock; zero: votes
	uptime  time.Duration
	seen    time.Time // when the node said uptime, on the client's clock
}

// uptimeAt is the node's uptime at now, from what it last said: a node
// known to sit out is not asked again until it may vote.
func (l *nodeLife) uptimeAt(now time.Time) time.Duration {
	return l.uptime + max(0, now.Sub(l.seen))
}

type restartState struct {
	fixed  time.Duration // the configured delay; 0: maxTTL
	maxTTL atomic.Int64

	mu    sync.Mutex
	nodes map[restartKey]*nodeLife
}

func newRestartState(ttl, fixed time.Duration) *restartState {
	s := &restartState{fixed: fixed, nodes: map[restartKey]*nodeLife{}}
	s.maxTTL.Store(int64(ttl))
	return s
}

// noteTTL records a TTL in use.
func (s *restartState) noteTTL(ttl time.Duration) {
	for {
		cur := s.maxTTL.Load()
		if int64(ttl) <= cur || s.maxTTL.CompareAndSwap(cur, int64(ttl)) {
			return
		}
	}
}

func (s *restartState) delay() time.Duration {
	if s.fixed > 0 {
		return s.fixed
	}
	return time.Duration(s.maxTTL.Load())
}

// pending returns a *restartError when node i (not a Cluster) is known to
// sit out at now.
func (s *restartState) pending(i int, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.nodes[restartKey{node: i}]
	if l == nil || !now.Before(l.votesAt) {
		return nil
	}
	return &restartError{RunID: l.runID, PrevRunID: l.prev, Uptime: l.uptimeAt(now), Delay: s.delay(), Left: l.votesAt.Sub(now)}
}

// observe records what node i (server on a Cluster) said at now and returns
// a *restartError when it must not vote.
func (s *restartState) observe(i int, server string, now time.Time, runID string, uptime time.Duration) error {
	if runID == "" {
		return fmt.Errorf("%w: the node did not report a run_id (INFO server); restart detection cannot vouch for it", ErrNodeRestarted)
	}
	delay := s.delay()
	k := restartKey{node: i, server: server}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.nodes[k]
	if l == nil {
		l = &nodeLife{}
		s.nodes[k] = l
	}
	if err := l.observe(now, runID, uptime, delay); err != nil {
		return err
	}
	return nil
}

// observe applies the rules: a changed run_id sits out delay from when it
// is seen (the restart happened at most then; a failover to a long-running
// replica also changes it); a node up for less than delay sits out until it
// has been up that long.
func (l *nodeLife) observe(now time.Time, runID string, uptime, delay time.Duration) *restartError {
	later := func(t time.Time) {
		if t.After(l.votesAt) {
			l.votesAt = t
		}
	}
	if l.runID != "" && l.runID != runID {
		l.prev = l.runID
		later(now.Add(delay))
	}
	l.runID, l.uptime, l.seen = runID, uptime, now
	if uptime < delay {
		later(now.Add(delay - uptime))
	}
	if now.Before(l.votesAt) {
		return &restartError{RunID: runID, PrevRunID: l.prev, Uptime: uptime, Delay: delay, Left: l.votesAt.Sub(now)}
	}
	l.prev = ""
	return nil
}
