package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// With 2 of 3 nodes refusing connections no lock can be obtained: check
// fails, and locks and inspect say which nodes did not answer and exit 3.
// With 1 of 3 down they pass and warn.
func TestNoQuorumFailsTheTools(t *testing.T) {
	bin := buildCLI(t)
	live := localredis.StartNT(t, 2, localredis.Config{Persistence: localredis.AOFAlways})
	dead1, dead2 := testutil.RefusedAddr(t), testutil.RefusedAddr(t)
	twoDown := strings.Join([]string{"redis://" + live[0].Addr(), "redis://" + dead1, "redis://" + dead2}, ",")
	oneDown := strings.Join([]string{"redis://" + live[0].Addr(), "redis://" + live[1].Addr(), "redis://" + dead1}, ",")
	env := []string{"QUORUMLOCK_NODES="}

	code, out, stderr := runBin(t, bin, env, "check", "--nodes", twoDown)
	if code != 1 || !strings.Contains(out, "only 1 of 3 nodes answered and a lock needs 2") || !strings.Contains(stderr, "1 problem(s)") {
		t.Errorf("check, 2 of 3 down: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"locks"}, {"locks", "--json"}, {"inspect", "orders/1"}, {"inspect", "--json", "orders/1"}} {
		code, out, stderr = runBin(t, bin, env, append(args, "--nodes", twoDown)...)
		if code != 3 || !strings.Contains(stderr, "only 1 of 3 nodes answered") || !strings.Contains(stderr, dead1) || !strings.Contains(stderr, dead2) ||
			!strings.Contains(stderr, "connection refused") {
			t.Errorf("%v, 2 of 3 down: exit %d\n%s%s", args, code, out, stderr)
		}
		if strings.Count(stderr, "\n") > 8 {
			t.Errorf("%v: %d lines on stderr (go-redis logs?)\n%s", args, strings.Count(stderr, "\n"), stderr)
		}
	}

	// One node down: a quorum answers, with none to spare. check fails
	// with its own code unless --allow-degraded; the tools pass and name
	// the silent node.
	code, out, stderr = runBin(t, bin, env, "check", "--nodes", oneDown)
	if code != exitDegraded || !strings.Contains(stderr, "degraded: 2 of 3 nodes answer and a lock needs 2") ||
		!strings.Contains(stderr, dead1) || !strings.Contains(stderr, "--allow-degraded") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("check, 1 of 3 down: exit %d, want %d\n%s%s", code, exitDegraded, out, stderr)
	}
	code, out, stderr = runBin(t, bin, env, "check", "--allow-degraded", "--nodes", oneDown)
	if code != 0 || strings.Contains(out, "a lock needs") || stderr != "" {
		t.Errorf("check --allow-degraded, 1 of 3 down: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"locks"}, {"inspect", "orders/1"}} {
		code, out, stderr = runBin(t, bin, env, append(args, "--nodes", oneDown)...)
		if code != 0 || !strings.Contains(stderr, "1 of 3 nodes did not answer") || !strings.Contains(stderr, dead1) {
			t.Errorf("%v, 1 of 3 down: exit %d\n%s%s", args, code, out, stderr)
		}
	}
}

// lock --wait with 2 of 3 nodes down: a short error on stderr naming both
// nodes and why (connection refused), no go-redis pool logs, exit 3 (not
// 75: nobody was seen holding the lock).
func TestLockWaitNodesDownDiagnostics(t *testing.T) {
	bin := buildCLI(t)
	live := localredis.StartT(t, localredis.Config{})
	dead1, dead2 := testutil.RefusedAddr(t), testutil.RefusedAddr(t)
	nodes := strings.Join([]string{"redis://" + live.Addr(), "redis://" + dead1, "redis://" + dead2}, ",")
	code, out, stderr := runBin(t, bin, []string{"QUORUMLOCK_NODES="}, "lock", "--nodes", nodes, "--wait", "2s", "job", "--", "true")
	if code != exitUnsure || !strings.Contains(stderr, `lock "job" not obtained within 2s: `) || !strings.Contains(stderr, "do not answer, ") || !strings.Contains(stderr, "a lock needs 2 of 3 (") {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUnsure, out, stderr)
	}
	if n := strings.Count(stderr, "\n"); n > 8 {
		t.Errorf("%d lines on stderr:\n%s", n, stderr)
	}
	if strings.Contains(stderr, "redis: ") || strings.Contains(stderr, "pool") {
		t.Errorf("go-redis logs on stderr:\n%s", stderr)
	}
	for _, d := range []string{dead1, dead2} {
		if !strings.Contains(stderr, d+": dial tcp "+d+": connect: connection refused") {
			t.Errorf("stderr does not say %s refused connections:\n%s", d, stderr)
		}
	}
}
