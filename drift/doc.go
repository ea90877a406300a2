// Package drift holds the validity arithmetic of a lease and the clock it is
// measured on.
//
// A lease granted by Redis nodes is valid for its TTL counted from the moment
// the node set the key. The client cannot know that moment, only that it lies
// after the acquisition started, and its own clock may run at a slightly
// different rate from the nodes' clocks. So the client counts:
//
//	validity = ttl − elapsed − (ttl·factor + 2 ms)
//
// from the end of the acquisition, where elapsed is how long the acquisition
// took on the client's monotonic clock and ttl·factor + 2 ms is the drift
// allowance (the Redlock algorithm's CLOCK_DRIFT_FACTOR; 2 ms covers timer
// granularity). A validity that is not positive means the lease was never
// usable.
//
// The clock is an interface (Clock) so tests can drive time by hand (Fake);
// System is the process's monotonic clock. Check validates a TTL and a
// factor before use: a TTL not longer than its own drift allowance can never
// give a usable lease.
package drift
