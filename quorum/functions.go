package quorum

import (
	"context"
	"errors"
	"slices"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/node"
)

// WithFunctions makes the client run the library's Lua scripts as Redis
// Functions, calling FCALL instead of EVALSHA and EVAL, for deployments whose
// ACLs or managed service forbid EVAL (Redis 7.0 or newer). The scripts are
// one function library, named after its version (node.FunctionsLibrary), so
// two versions of this package coexist during a rolling upgrade.
//
// Default off: loading the library needs FUNCTION LOAD, a permission a
// lock user rarely has and EVAL users do not need. With it on, each node
// loads the library by itself at the client's start and again whenever it
// lost it (a restart without persistence, FUNCTION FLUSH), when the Redis
// user may run FUNCTION LOAD; otherwise an operator loads it once per node
// (Client.LoadFunctions, or redis-cli FUNCTION LOAD with
// node.FunctionsCode) and the user needs only +fcall.
func WithFunctions(on bool) Option {
	return func(c *config) {
		c.functions = -1
		if on {
			c.functions = 1
		}
	}
}

// functionsOptions are the node options of WithFunctions: none when it
// was not given, so node.New keeps its own default (the tests' switch).
func (c config) functionsOptions() []node.Option {
	if c.functions == 0 {
		return nil
	}
	return []node.Option{node.WithFunctions(c.functions > 0)}
}

// LoadFunctions loads this version's function library (WithFunctions) on
// every node, in parallel, replacing a library of the same version: an
// operator's step when lock users may not run FUNCTION LOAD. It works
// without WithFunctions. The error names each node that failed (a
// *NodeError).
func (c *Client) LoadFunctions(ctx context.Context) error {
	errs := fanout.All(len(c.nodes), func(i int) error {
		if err := c.nodes[i].LoadFunctions(ctx); err != nil {
			return &NodeError{Node: c.nodes[i].Name(), Err: err}
		}
		return nil
	})
	return errors.Join(errs...)
}

// DeleteOtherFunctions deletes the function libraries of other versions of
// this package from every node (node.Node.DeleteOtherFunctions): after a
// rolling upgrade, once no client of an older version is left. It returns
// the names it deleted, each once.
func (c *Client) DeleteOtherFunctions(ctx context.Context) ([]string, error) {
	got := make([][]string, len(c.nodes))
	errs := fanout.All(len(c.nodes), func(i int) error {
		var err error
		if got[i], err = c.nodes[i].DeleteOtherFunctions(ctx); err != nil {
			return &NodeError{Node: c.nodes[i].Name(), Err: err}
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
