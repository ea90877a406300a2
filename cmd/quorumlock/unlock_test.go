package main

import (
	"context"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

func TestUnlockCommand(t *testing.T) {
	spec, c := opsNodes(t, 3)
	ctx := t.Context()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())

	// Without --force: refused, the lock stays.
	code, out, stderr := cli("unlock", "--nodes", spec, "orders/42")
	if code != 2 || !strings.Contains(stderr, "without --force") {
		t.Fatalf("unlock without --force: exit %d\n%s%s", code, out, stderr)
	}
	if ins, _ := c.Admin().Inspect(ctx, "orders/42"); ins.Verdict != admin.HeldByQuorum {
		t.Fatalf("refused unlock changed the lock: %q", ins.Verdict)
	}

	code, out, stderr = cli("unlock", "--nodes", spec, "--force", "--by", "alice", "orders/42")
	if code != 0 || !strings.Contains(out, "orders/42 was held by worker-1") || !strings.Contains(out, `recorded: by alice via cli`) {
		t.Fatalf("unlock --force: exit %d\n%s%s", code, out, stderr)
	}
	ins, _ := c.Admin().Inspect(ctx, "orders/42")
	if ins.Verdict != admin.Free || ins.Forced == nil || ins.Forced.By != "alice" || ins.Forced.Via != "cli" {
		t.Fatalf("after unlock --force: %q forced %+v", ins.Verdict, ins.Forced)
	}
	// inspect shows the record.
	if code, out, _ = cli("inspect", "--nodes", spec, "orders/42"); code != 0 || !strings.Contains(out, "force-unlocked by alice at ") || !strings.Contains(out, " via cli") {
		t.Fatalf("inspect after the force: exit %d\n%s", code, out)
	}
	// Default who: user@host.
	lease2, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease2.Unlock(context.Background())
	if code, out, _ = cli("unlock", "--nodes", spec, "--force", "orders/42"); code != 0 || !strings.Contains(out, "by "+safetext.Quote(operator())+" via cli") {
		t.Fatalf("unlock with the default --by: exit %d\n%s", code, out)
	}
	// A name no node holds is an error with its own code, said on stderr
	// only; nothing is recorded on the nodes.
	code, out, stderr = cli("unlock", "--nodes", spec, "--force", "nope")
	if code != exitMissing || !strings.Contains(stderr, `quorumlock unlock: no node holds "nope"`) || strings.Count(stderr, "\n") != 1 || out != "" {
		t.Fatalf("unlock --force of a name nobody holds: exit %d, want %d\n%s%s", code, exitMissing, out, stderr)
	}
	if code, out, stderr = cli("unlock", "--nodes", spec, "--force", "nope", "--missing-ok"); code != 0 || out != "" || !strings.Contains(stderr, `no node holds "nope", nothing was removed`) {
		t.Fatalf("unlock --force --missing-ok of a name nobody holds: exit %d\nstdout %q\nstderr %q", code, out, stderr)
	}
	if ins, _ := c.Admin().Inspect(ctx, "nope"); ins.Forced != nil {
		t.Fatalf("a force-unlock that removed nothing left a record: %+v", ins.Forced)
	}
}
