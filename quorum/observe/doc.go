// Package observe holds what a quorumlock client tells about its work: the
// Event of every lock operation (an acquisition attempt with each node's
// Vote, a Lock or TryLock with its wait, a renewal, a release, a lost
// lease) given to an Observer, the Report of how a lease was obtained, and
// RedisLogger for go-redis's own log lines.
//
// It depends on nothing of the library, so an observer (package otelquorum
// turns events into OpenTelemetry metrics and spans) is written against
// these types alone; a client takes one with quorum.WithObserver, and a
// lease's quorum.Lease.Report returns a Report.
package observe
