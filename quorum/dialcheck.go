package quorum

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/multilock"
)

// ErrUnreachable: fewer than a quorum of nodes answered WithDialCheck's
// ping. The error that wraps it names every node that did not answer
// (*NodeError through errors.As, Nodes, %+v).
var ErrUnreachable = errors.New("quorumlock: fewer than a quorum of nodes answered")

// opDial is the operation of WithDialCheck's error.
const opDial = "dial"

// WithDialCheck makes Dial, New and FromEnv fail fast: they ping every
// node in parallel and return an error wrapping ErrUnreachable (one
// *NodeError per node that did not answer) when fewer than a quorum
// answer within timeout, after closing what they opened. Default 0: off,
// because a client may legitimately start before its nodes (a service
// that comes up with its Redis deployments, a node restarting): without
// the check New connects to the nodes that answer within a second and
// every Lock reports the nodes it could not reach. Turn it on where a
// missing quorum at start is a configuration error, as in a CLI or a
// batch job.
func WithDialCheck(timeout time.Duration) Option {
	return func(c *config) { c.onlyClient("WithDialCheck"); c.dialCheck = timeout }
}

// dialCheck pings every node within timeout and reports when fewer than a
// quorum answered.
func (c *Client) dialCheck(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	n := len(c.nodes)
	errs := fanout.All(n, func(i int) error {
		if err := c.nodes[i].Warm(ctx); err != nil {
			return &NodeError{Node: c.nodes[i].Name(), Err: err}
		}
		return nil
	})
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if ok >= multilock.Need(c.cfg.policy, n) {
		return nil
	}
	e := newError(opDial, ErrUnreachable, n, errs...)
	e.Granted = ok
	return e
}
