package quorum

import (
	"github.com/quorumlock/quorumlock/internal/node"
)

// WithFunctions makes the client run the library's Lua scripts as Redis
// Functions, calling FCALL instead of EVALSHA and EVAL, for deployments whose
// ACLs or managed service forbid EVAL (Redis 7.0 or newer). The scripts are
// one function library, named after its version (node.FunctionsLibrary()), so
// two versions of this package coexist during a rolling upgrade.
//
// Default off: loading the library needs FUNCTION LOAD, a permission a
// lock user rarely has and EVAL users do not need. With it on, each node
// loads the library by itself at the client's start and again whenever it
// lost it (a restart without persistence, FUNCTION FLUSH), when the Redis
// user may run FUNCTION LOAD; otherwise an operator loads it once per node
// (Client.Admin().LoadFunctions, or redis-cli FUNCTION LOAD with the
// code `quorumlock functions code` prints) and the user needs only +fcall.
func WithFunctions(on bool) Option {
	return func(c *config) {
		c.onlyClient("WithFunctions")
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
