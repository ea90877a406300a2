// Package fanout runs one call per node in parallel and waits for all of
// them: the plain fan-out of the operator tools and of Close, where every
// node's answer is wanted and none decides early. (The lock's own fan-outs,
// multilock's and FairMutex's ticket, return once a quorum is decided; they
// keep their own loops.)
package fanout

import "golang.org/x/sync/errgroup"

// All calls f(i) for i in [0, n) at once and returns their errors, indexed
// like the calls, once every call returned. Each call writes only its own
// slot. One failing call does not cancel the others: a zero errgroup.Group
// does not, which is what a set of independent nodes needs. Bound each call
// by its own context deadline; All waits for the slowest.
func All(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	_ = g.Wait() // every call reports in errs
	return errs
}
