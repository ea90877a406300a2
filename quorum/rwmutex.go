package quorum

import "context"

// RWMutex is a read-write lock on the client's quorum: many readers or one
// writer. It keeps Redisson's model on every node (a hash with a mode field,
// "read" or "write", in the same keys as a Mutex of the same name, so a
// Mutex and an RWMutex of one name exclude each other); a read or write
// lease needs the policy's quorum of nodes like any lease. Majorities
// intersect, so a writer and a reader can never both hold a majority.
//
// With WithOwner it is reentrant: an owner may take the read or write lock
// again while it holds it, and an owner holding the write lock may take the
// read lock too (a downgrade: release the write lease, keep reading). A
// reader cannot upgrade to the write lock: release the read lock first.
// Without WithOwner every acquisition is its own owner.
//
// Leases are ordinary Leases: the watchdog renews them, fencing tokens,
// WithReplicaAck and WithRestartDetection apply. With WithFencing, the token goes
// up when the lock passes from free to held: successive writers get
// increasing tokens; readers that overlap share one.
//
// Waiting readers are all woken by an unlock message (writers one at a
// time); readers keep arriving while others read, so a steady stream of
// readers can keep a writer waiting (no writer preference, as in Redisson).
//
// An RWMutex is immutable configuration, safe for concurrent use.
type RWMutex struct {
	r, w *Mutex
}

// RWMutex returns the read-write lock called name. Its options (WithOwner,
// WithLeaseTime, WithTTL) apply to both sides.
func (c *Client) RWMutex(name string, opts ...Option) (*RWMutex, error) {
	r, err := c.newMutex([]string{name}, opts)
	if err != nil {
		return nil, err
	}
	w, err := c.newMutex([]string{name}, opts)
	if err != nil {
		return nil, err
	}
	r.kind, w.kind = rwShare{write: false}, rwShare{write: true}
	return &RWMutex{r: r, w: w}, nil
}

// Lock waits for the write lock (see Mutex.Lock).
func (rw *RWMutex) Lock(ctx context.Context) (*Lease, error) { return rw.w.Lock(ctx) }

// TryLock tries once for the write lock (see Mutex.TryLock).
func (rw *RWMutex) TryLock(ctx context.Context) (*Lease, error) { return rw.w.TryLock(ctx) }

// RLock waits for a read lock (see Mutex.Lock).
func (rw *RWMutex) RLock(ctx context.Context) (*Lease, error) { return rw.r.Lock(ctx) }

// TryRLock tries once for a read lock (see Mutex.TryLock).
func (rw *RWMutex) TryRLock(ctx context.Context) (*Lease, error) { return rw.r.TryLock(ctx) }
