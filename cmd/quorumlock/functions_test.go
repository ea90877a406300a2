package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

func TestFunctionsCommand(t *testing.T) {
	servers := localredis.StartNT(t, 2, localredis.Config{})
	spec := testutil.URLs(servers)
	ctx := t.Context()
	libs := func(s *localredis.Server) []string {
		c := s.Client()
		defer c.Close()
		ls, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}

	if code, out, errOut := cli("functions", "code"); code != exitOK || !strings.HasPrefix(out, "#!lua name="+node.FunctionsLibrary()+"\n") {
		t.Fatalf("functions code: exit %d, %.80q, %s", code, out, errOut)
	}
	// An older version on one node, as after an upgrade.
	c := servers[0].Client()
	err := c.FunctionLoad(ctx, "#!lua name=quorumlock_0123456789ab\nredis.register_function('quorumlock_0123456789ab_x', function() return 1 end)").Err()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli("functions", "--nodes", spec, "load"); code != exitOK || !strings.Contains(out, node.FunctionsLibrary()) {
		t.Fatalf("functions load: exit %d, %q, %s", code, out, errOut)
	}
	if got := libs(servers[1]); len(got) != 1 || got[0] != node.FunctionsLibrary() {
		t.Fatalf("after load: %v", got)
	}
	if code, out, errOut := cli("functions", "--nodes", spec, "prune"); code != exitOK || strings.TrimSpace(out) != "deleted quorumlock_0123456789ab" {
		t.Fatalf("functions prune: exit %d, %q, %s", code, out, errOut)
	}
	if got := libs(servers[0]); len(got) != 1 || got[0] != node.FunctionsLibrary() {
		t.Fatalf("after prune: %v", got)
	}
	if code, _, errOut := cli("functions", "--nodes", spec, "flush"); code != exitUsage || !strings.Contains(errOut, "load, code, prune") {
		t.Fatalf("functions flush: exit %d, %s", code, errOut)
	}
}
