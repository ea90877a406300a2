package node

import "time"

// State is what one node knows of one lock (quorum/admin's NodeState).
type State struct {
	// Present is whether the node holds the lock for anyone.
	Present bool
	// Holders maps owner to hold count.
	Holders map[string]int64
	// Attempts is how many acquisition attempts hold shares.
	Attempts int
	// TTL is the remaining time to live (0 when absent).
	TTL time.Duration
	// Fence is the fencing counter (0 when none).
	Fence int64
	// Mode is the read-write mode ("read" or "write") of a read-write lock,
	// "" for a plain lock.
	Mode string
	// Forced is the last force-unlock recorded here (nil when none within
	// ForcedRecordTTL).
	Forced *Forced
	// Labels maps a holder to the label its client registered on this node
	// (quorum.WithLabel), for the holders that have one.
	Labels map[string]string
}

// Forced is the record of the last force-unlock of a lock on a node
// (quorum/admin's ForceUnlock), kept ForcedRecordTTL.
type Forced struct {
	By      string    // who forced it, as the operator gave it
	Via     string    // where from, as the tool knew it; may be empty
	At      time.Time // when, on the operator's clock
	Removed bool      // whether the lock was present on this node (a record is made only then)
}
