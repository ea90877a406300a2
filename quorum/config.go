package quorum

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/internal/redact"
)

// EnvNodes is the environment variable holding the node URLs, separated by
// commas or spaces: QUORUMLOCK_NODES="redis://:pw@10.0.0.1:6379/0,rediss://10.0.0.2:6380".
const EnvNodes = "QUORUMLOCK_NODES"

// parseNodes turns node URLs (redis:// or rediss:// with user, password, DB
// and TLS, as go-redis' ParseURL reads them; a bare host:port means
// redis://host:port) into go-redis clients with the settings a lock needs:
// context deadlines honoured, no hidden retries. The caller closes them
// (closeAll).
func parseNodes(urls string) ([]redis.UniversalClient, error) {
	fields := redact.Fields(urls)
	if len(fields) == 0 {
		return nil, errors.New("quorumlock: no node URLs given; expected e.g. redis://127.0.0.1:6379,redis://127.0.0.1:6380")
	}
	var out []redis.UniversalClient
	for _, f := range fields {
		u := f
		if !strings.Contains(u, "://") {
			u = "redis://" + u
		}
		opt, err := redis.ParseURL(u)
		if err != nil {
			closeAll(out)
			// url.Error repeats the whole URL, password included.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			// A parser's error may repeat part of it, a password too.
			return nil, fmt.Errorf("quorumlock: node %q: %s", redact.Node(f), redact.Text(err.Error(), f))
		}
		opt.ContextTimeoutEnabled = true
		opt.MaxRetries = -1
		opt.DialerRetries = 1
		opt.DialerRetryTimeout = time.Microsecond // see node.Options
		out = append(out, redis.NewClient(opt))
	}
	return out, nil
}

// closeAll closes go-redis clients.
func closeAll(clients []redis.UniversalClient) error {
	var errs []error
	for _, c := range clients {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return oneline.Join(errs...)
}

// Dial builds a Client from node URLs, separated by commas or spaces:
// redis:// or rediss:// with user, password, DB and TLS, as go-redis'
// ParseURL reads them; a bare host:port means redis://host:port. Each node
// gets a go-redis client with the settings a lock needs (node.Options):
// context deadlines honoured, no hidden retries. Close on the returned
// client also closes the go-redis clients it made.
func Dial(urls string, opts ...Option) (*Client, error) {
	clients, err := parseNodes(urls)
	if err != nil {
		return nil, err
	}
	c, err := New(clients, opts...)
	if err != nil {
		closeAll(clients)
		return nil, err
	}
	c.owned = clients
	return c, nil
}

// FromEnv builds a Client from $QUORUMLOCK_NODES (see Dial), so a service and
// the CLI configure the same way.
func FromEnv(opts ...Option) (*Client, error) {
	v := os.Getenv(EnvNodes)
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("quorumlock: $%s is empty; set it to the node URLs, e.g. redis://127.0.0.1:6379,redis://127.0.0.1:6380,redis://127.0.0.1:6381", EnvNodes)
	}
	return Dial(v, opts...)
}
