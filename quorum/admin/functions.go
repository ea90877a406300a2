package admin

import (
	"context"
	"errors"
	"slices"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/multilock"
)

// LoadFunctions loads this version's function library
// (quorum.WithFunctions) on every node, in parallel, replacing a library
// of the same version: an operator's step when lock users may not run
// FUNCTION LOAD. It works whether or not the client uses Functions. The
// error names each node that failed (a *multilock.NodeError).
func (t *Tools) LoadFunctions(ctx context.Context) error {
	errs := fanout.All(len(t.nodes), func(i int) error {
		if err := t.nodes[i].LoadFunctions(ctx); err != nil {
			return &multilock.NodeError{Node: t.nodes[i].Name(), Err: err}
		}
		return nil
	})
	return errors.Join(errs...)
}

// DeleteOtherFunctions deletes the function libraries of other versions of
// this package from every node: after a rolling upgrade, once no client of
// an older version is left. It returns the names it deleted, each once,
// sorted.
func (t *Tools) DeleteOtherFunctions(ctx context.Context) ([]string, error) {
	got := make([][]string, len(t.nodes))
	errs := fanout.All(len(t.nodes), func(i int) error {
		var err error
		if got[i], err = t.nodes[i].DeleteOtherFunctions(ctx); err != nil {
			return &multilock.NodeError{Node: t.nodes[i].Name(), Err: err}
		}
		return nil
	})
	var out []string
	for _, names := range got {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, errors.Join(errs...)
}
