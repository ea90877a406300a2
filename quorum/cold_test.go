package quorum

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// A new client's first TryLock of a free name must not spend its per-node
// share on dialling: with connections that take 150 ms to set up and an
// attempt budget of 150 ms (50 ms a node), a client that dials inside its
// first attempt is refused by every node; New's connection set-up makes the
// first attempt find them ready.
func TestColdClientFirstTryLock(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	clients := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		o := node.Options(s.Addr())
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &testutil.LateFirstRead{Conn: c, Delay: 150 * time.Millisecond}, nil
		}
		rc := redis.NewClient(o)
		t.Cleanup(func() { _ = rc.Close() })
		clients[i] = rc
	}
	c, err := New(clients, WithAttemptTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex("cold")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatalf("first TryLock of a free name on a new client: %v", err)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}
