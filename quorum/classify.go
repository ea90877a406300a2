package quorum

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/oneline"
)

// ErrUnanswered marks a failed attempt in which no node refused: the nodes
// that did not grant only failed to answer within the attempt timeout (or
// its per-node share). The lock may well be free; raise
// WithAttemptTimeout on a slow network or a busy machine, or look at the
// nodes. It comes joined with ErrNotObtained and the per-node errors.
var ErrUnanswered = errors.New("quorumlock: nodes did not answer in time (none said the lock is held): raise WithAttemptTimeout or check the nodes")

// connectTimeout bounds New's connection set-up to all nodes together.
const connectTimeout = time.Second

// warm connects to every node in parallel (a PING each; every master of a
// Cluster), so the first attempt does not spend its per-node share (83 ms
// of the default 250 ms with 3 nodes) on a dial and a handshake: on a
// loaded host a new client's first TryLock of a free name timed out on
// every node and read as "not obtained". New calls it; a node that does not
// answer within ctx is named in the error (a *NodeError) and is the
// attempts' business.
func (c *Client) warm(ctx context.Context) error {
	errs := fanout.All(len(c.nodes), func(i int) error {
		if err := c.nodes[i].Warm(ctx); err != nil {
			return &NodeError{Node: c.nodes[i].Name(), Err: err}
		}
		return nil
	})
	return oneline.Join(errs...)
}

// markUnanswered adds ErrUnanswered to a failed attempt's error when
// every node that did not grant only failed to answer in time.
func markUnanswered(err error) error {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrClosed) || errors.Is(err, ErrUnanswered) {
		return err
	}
	nodes := e.Nodes()
	if len(nodes) == 0 {
		return err
	}
	for _, ne := range nodes {
		if rank(ne.Err) > 0 {
			return err
		}
	}
	e.withCause(ErrUnanswered)
	return err
}

// ErrPermanent marks a failed attempt that no retry can fix: more nodes
// than the policy can do without refused for a reason that stays, an ACL
// permission the Redis user lacks (the error names it), a wrong or missing
// password, a command the server does not know, keys in different Cluster
// slots (node.Permanent). Lock and Campaign
// return it at once instead of waiting; it comes joined with
// ErrNotObtained and the per-node errors (errors.As finds each node's
// *node.PermissionError).
var ErrPermanent = errors.New("quorumlock: refused for a reason no retry can fix")

// markPermanent adds ErrPermanent to a failed attempt's error when more
// nodes than limit failed with an error no retry can fix.
func markPermanent(err error, limit int) error {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrPermanent) {
		return err
	}
	broken := map[string]bool{}
	for _, ne := range e.Nodes() {
		if node.Permanent(ne.Err) {
			broken[ne.Node] = true
		}
	}
	if len(broken) > limit {
		e.withCause(ErrPermanent)
	}
	return err
}
