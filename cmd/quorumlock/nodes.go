package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redact"
	"github.com/quorumlock/quorumlock/quorum"
)

// nodesFlag adds the shared --nodes flag to fs: the Redis nodes as
// redis:// or rediss:// URLs (user, password, DB, TLS), separated by commas
// or spaces. When it is not given, dialNodes reads $QUORUMLOCK_NODES, so a
// service (quorum.FromEnv) and the CLI configure the same way. (The variable
// is not the flag's default value, so --help never prints a password.) An
// empty --nodes or a URL that does not parse is a usage error, never a
// fall-back to the variable. Pass the returned value to dialNodes after
// parsing: the flag itself accepts any text, since the flag package would
// repeat a refused value, passwords and all, in its error.
func nodesFlag(fs *flag.FlagSet) *string {
	spec := new(string)
	fs.Func("nodes",
		"Redis nodes as redis:// or rediss:// `URLS` separated by commas, e.g. redis://:pw@10.0.0.1:6379/0,rediss://10.0.0.2:6380 (default $"+quorum.EnvNodes+", which keeps passwords out of ps)",
		func(v string) error {
			if v == "" {
				v = " " // given but empty: checkNodes refuses it, no fall-back
			}
			*spec = v
			return nil
		})
	return spec
}

// splitNodes splits a node list as quorum.Dial does: commas or white space.
func splitNodes(spec string) []string { return redact.Fields(spec) }

// checkNodes says what is wrong with a --nodes value: empty, or a URL that
// does not parse (a bare host:port is redis://host:port, as for Dial). The
// error never repeats a password.
func checkNodes(spec string) error {
	fields := splitNodes(spec)
	if len(fields) == 0 {
		return errors.New("--nodes is empty: give the nodes, e.g. --nodes redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379, or leave the flag out to use $" + quorum.EnvNodes)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		u := f
		if !strings.Contains(u, "://") {
			u = "redis://" + u
		}
		if seen[u] {
			return fmt.Errorf("node %q is named twice: every node must be a distinct Redis deployment", redact.Node(f))
		}
		seen[u] = true
		if _, err := redis.ParseURL(u); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // url.Error repeats the URL, password included
			}
			// The parser's message may quote a part of it, a password too.
			return fmt.Errorf("node %q is not a redis:// or rediss:// URL: %s", redact.Node(f), redact.Text(err.Error(), f))
		}
	}
	return nil
}

// errNoNodes says where the node list comes from; a usage error.
var errNoNodes = fmt.Errorf("%w: no nodes given: pass --nodes redis://host:port,... or set $%s", errUsage, quorum.EnvNodes)

// dialNodes connects a quorum client to the nodes of a --nodes value (see
// nodesFlag), or of $QUORUMLOCK_NODES when it is empty (not given). With
// neither it returns errNoNodes. --nodes before the subcommand
// (globalNodes) comes between the two. A node list that does not parse is a
// usage error. Close the client when done; it closes the connections it
// made.
func dialNodes(spec string, opts ...quorum.Option) (*quorum.Client, error) {
	from := "--nodes"
	if spec == "" {
		spec = globalNodes
	}
	if spec == "" {
		spec, from = os.Getenv(quorum.EnvNodes), "$"+quorum.EnvNodes
		if strings.TrimSpace(spec) == "" {
			return nil, errNoNodes
		}
	}
	if err := checkNodes(spec); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, from, err)
	}
	return quorum.Dial(spec, opts...)
}
