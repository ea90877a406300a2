package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// Holders carry a label: host:pid by default, lock --owner otherwise; locks,
// inspect and --json show it, and a holder stopped by a force-unlock is
// told who forced it and when.
func TestHolderLabels(t *testing.T) {
	bin := buildCLI(t)
	servers := localredis.StartNT(t, 3, localredis.Config{})
	nodes := testutil.URLs(servers)
	env := []string{"QUORUMLOCK_NODES=" + nodes}
	dir := t.TempDir()
	host, _ := os.Hostname()

	started := filepath.Join(dir, "started")
	a := startLock(t, bin, nodes, "--ttl", "1s", "plain", "--", "sh", "-c", "touch "+started+"; sleep 30")
	waitFile(t, started, "", 10*time.Second)
	want := host + ":" + strconv.Itoa(a.cmd.Process.Pid)
	code, out, stderr := runBin(t, bin, env, "locks")
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("locks does not show the default label %q: exit %d\n%s%s", want, code, out, stderr)
	}

	started2 := filepath.Join(dir, "started2")
	b := startLock(t, bin, nodes, "--ttl", "1s", "--owner", "worker-1", "orders/42", "--", "sh", "-c", "touch "+started2+"; sleep 30")
	waitFile(t, started2, "", 10*time.Second)
	code, out, stderr = runBin(t, bin, env, "inspect", "orders/42")
	if code != 0 || !strings.Contains(out, "held by worker-1 ") {
		t.Errorf("inspect: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runBin(t, bin, env, "locks", "--json", "--match", "orders/*")
	if code != 0 || !strings.Contains(out, `"holder_labels": [`) || !strings.Contains(out, `"worker-1"`) {
		t.Errorf("locks --json: exit %d\n%s", code, out)
	}
	code, out, stderr = runBin(t, bin, env, "unlock", "--force", "--by", "alice", "orders/42")
	if code != 0 || !strings.Contains(out, "orders/42 was held by worker-1") {
		t.Fatalf("unlock --force: exit %d\n%s%s", code, out, stderr)
	}
	if code := b.wait(t, 20*time.Second); code != exitLeaseLost {
		t.Fatalf("forced holder exited %d, want %d: %s", code, exitLeaseLost, b.stderr.String())
	}
	if s := b.stderr.String(); !strings.Contains(s, "force-unlocked by alice at ") || !strings.Contains(s, " via cli") {
		t.Errorf("the forced holder is not told who forced it:\n%s", s)
	}
}
