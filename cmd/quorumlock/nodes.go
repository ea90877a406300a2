package main

import (
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/quorumlock/quorumlock/quorum"
)

// nodesFlag adds the shared --nodes flag to fs: the Redis nodes as
// redis:// or rediss:// URLs (user, password, DB, TLS), separated by commas
// or spaces. When it is not given, dialNodes reads $QUORUMLOCK_NODES, so a
// service (quorum.FromEnv) and the CLI configure the same way. (The variable
// is not the flag's default value, so --help never prints a password.) Pass
// the returned value to dialNodes after parsing.
func nodesFlag(fs *flag.FlagSet) *string {
	return fs.String("nodes", "",
		"Redis nodes as redis:// or rediss:// URLs separated by commas, e.g. redis://:pw@10.0.0.1:6379/0,rediss://10.0.0.2:6380 (default $"+quorum.EnvNodes+")")
}

// errNoNodes says where the node list comes from.
var errNoNodes = errors.New("no nodes given: pass --nodes redis://host:port,... or set $" + quorum.EnvNodes)

// dialNodes connects a quorum client to the nodes of a --nodes value (see
// nodesFlag), or of $QUORUMLOCK_NODES when it is empty. With neither it
// returns errNoNodes. --nodes before the subcommand (globalNodes) comes
// between the two. Close the client when done; it closes the
// connections it made.
func dialNodes(spec string, opts ...quorum.Option) (*quorum.Client, error) {
	if strings.TrimSpace(spec) == "" {
		spec = globalNodes
	}
	if strings.TrimSpace(spec) == "" {
		spec = os.Getenv(quorum.EnvNodes)
	}
	if strings.TrimSpace(spec) == "" {
		return nil, errNoNodes
	}
	return quorum.Dial(spec, opts...)
}
