package quorum

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotReplicated: a node granted, but fewer of its replicas than WithReplicaAck
// asks acknowledged the write in time, so its vote did not count.
var ErrNotReplicated = errors.New("quorumlock: write not acknowledged by enough replicas")

// waitError is why a node's grant did not count under WithReplicaAck: WAIT
// returned fewer acknowledging replicas than wanted within the timeout. It
// unwraps to ErrNotReplicated.
type waitError struct {
	Want, Acked int
	Timeout     time.Duration
}

func (e *waitError) Error() string {
	return fmt.Sprintf("WAIT: %d of %d replicas acknowledged within %v (check this node's replication links, or lower WithReplicaAck's replica count)",
		e.Acked, e.Want, e.Timeout)
}

func (e *waitError) Unwrap() error { return ErrNotReplicated }

// WithReplicaAck is a per-node durability gate for nodes that are master +
// replica groups: after a node grants (and after every extension and
// fencing write on it), WAIT replicas timeout runs on the same connection in
// the same round trip, and the node's vote counts only if at least replicas
// replicas acknowledged the write. A grant that does not count is given back
// at once; the lease report (Lease.Report) gives the reason: how many
// replicas acknowledged, and errors.Is finds ErrNotReplicated in it.
//
// This closes the failover hole: a lock key that only the master had is lost
// when a replica that never got it is promoted. WAIT makes that unlikely,
// not impossible (a replica may acknowledge and still lose the write if it
// restarts without persistence).
//
// timeout must be below the per-node budget (the policy's LockWaitTime of the
// attempt timeout; 50 ms for 5 nodes and the default 250 ms): it is cut to
// 3/4 of what is left of each node call. Every node must have at least
// replicas replicas, or it never votes. Default off.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) {
		c.onlyClient("WithReplicaAck")
		c.safety.wait, c.safety.waitReplicas, c.safety.waitTimeout = true, replicas, timeout
	}
}
