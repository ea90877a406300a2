package browsertest

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// nodes starts n redis-server processes and a client over them; all is
// stopped in t.Cleanup.
func nodes(t *testing.T, n int, opts ...quorum.Option) ([]*localredis.Server, *quorum.Client) {
	t.Helper()
	servers, clients := testutil.Servers(t, n, localredis.Config{})
	c, err := quorum.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return servers, c
}
