package quorum_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testmode"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// The least-privilege ACLs of docs/operations.md, as ACL SETUSER rules.
// A change here must change the page, and the reverse.
const (
	// aclLockClient: Mutex, RWMutex, FairMutex, MultiLock, waiting,
	// fencing, the watchdog, Extend and Unlock, on the default key prefix.
	aclLockClient = "resetkeys ~quorumlock:* resetchannels &quorumlock:* -@all " +
		"+hello +ping +evalsha +eval +script|load +subscribe +unsubscribe +time " +
		// restart detection (default): CONFIG GET once per node, INFO server
		// with each acquire on a node without fsync-always persistence
		"+config|get +info " +
		// what the Lua scripts and the fast path call
		"+set +get +del +exists +pttl +pexpire +publish +hset +hget +hmget +hdel +hexists +hgetall +hincrby +hlen +incr +zadd +zrem +zscore +zrangebyscore +zpopmin"
	// aclOperator: quorumlock locks, inspect, unlock --force, check and the
	// console add SCAN, the reads of Inspect (in MULTI/EXEC), ZCOUNT (the
	// fair lines), INFO and CONFIG GET.
	aclOperator = aclLockClient + " +scan +type +multi +exec +zcount +info +config|get"
)

// aclServers starts n servers with the given users (name → rules) and a
// password on the default user; it returns the node URLs per user.
func aclServers(t *testing.T, n int, users map[string]string) map[string]string {
	t.Helper()
	servers := localredis.StartNT(t, n, localredis.Config{})
	urls := map[string][]string{}
	for _, s := range servers {
		admin := s.Client()
		var err error
		for user, rules := range users {
			args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + user + "-pw"}
			for _, r := range strings.Fields(rules) {
				args = append(args, r)
			}
			if err = admin.Do(t.Context(), args...).Err(); err != nil {
				break
			}
			urls[user] = append(urls[user], "redis://"+user+":"+user+"-pw@"+s.Addr())
		}
		if err == nil {
			// The default user needs a password from now on, too.
			err = admin.ConfigSet(t.Context(), "requirepass", "admin-pw").Err()
		}
		admin.Close()
		if err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
	}
	out := map[string]string{}
	for u, l := range urls {
		out[u] = strings.Join(l, ",")
	}
	return out
}

func dialT(t *testing.T, urls string, opts ...quorum.Option) *quorum.Client {
	t.Helper()
	c, err := quorum.Dial(urls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A lock client and the operator tools work with only the commands, keys
// and channels docs/operations.md lists; a missing permission is named.
func TestLeastPrivilegeACL(t *testing.T) {
	ctx := t.Context()
	noPublish := strings.Replace(aclLockClient, " +publish", "", 1)
	noMulti := strings.Replace(aclOperator, " +multi", "", 1)
	otherPrefix := strings.NewReplacer("~quorumlock:*", "~app:*", "&quorumlock:*", "&app:*").Replace(aclLockClient)
	urls := aclServers(t, 3, aclForMode(map[string]string{"locker": aclLockClient, "ops": aclOperator,
		"nopublish": noPublish, "nomulti": noMulti, "otherprefix": otherPrefix}))
	ops := dialT(t, urls["ops"])

	for _, fencing := range []bool{false, true} {
		opts := []quorum.Option{quorum.WithTTL(2 * time.Second), quorum.WithRetryInterval(200 * time.Millisecond), quorum.WithFencing(fencing)}
		// What a lock user does (functions_test.go): a woken waiter,
		// Extend, tokens, the read-write and fair locks, an election.
		exercise(t, dialT(t, urls["locker"], opts...), fencing, func() {})
	}

	// The operator tools, as the ops user, on a held lock.
	held, _ := dialT(t, urls["locker"]).Mutex("acl/held")
	hl, err := held.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Unlock(ctx)
	if list, err := ops.Admin().List(ctx, "*"); err != nil || len(list) == 0 {
		t.Fatalf("List: %v %v", err, list)
	}
	if in, err := ops.Admin().Inspect(ctx, "acl/held"); err != nil || in.Verdict != admin.HeldByQuorum {
		t.Fatalf("Inspect: %v %+v", err, in)
	}
	if _, err := ops.Admin().Queued(ctx, "acl/held", "acl/fair"); err != nil {
		t.Fatalf("Queued: %v", err)
	}
	if r, err := ops.Admin().Check(ctx); err != nil || r.Worst() >= admin.Problem {
		t.Fatalf("Check: %v\n%s", err, r)
	}
	if n, err := ops.Admin().ForceUnlock(ctx, "acl/held", "alice"); err != nil || n != 3 {
		t.Fatalf("ForceUnlock: %d %v", n, err)
	}

	// Without +publish a release still releases (the script publishes
	// last); only the wake-up message is lost, and that is a warning.
	var pe *node.PermissionError
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, _ := dialT(t, urls["nopublish"], quorum.WithFencing(true), quorum.WithLogger(logger)).Mutex("acl/nopublish")
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock without +publish: %v, want nil: the lock is released, only its wake-up message is lost", err)
	}
	// Unlock returns once a quorum released: the last node's release may
	// still be on its way, so look until every node answered it (5 s).
	free, err := ops.Admin().Inspect(ctx, "acl/nopublish")
	for end := time.Now().Add(5 * time.Second); err == nil && free.Verdict != admin.Free && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // poll: the last node's release lands with no event to wait on
		free, err = ops.Admin().Inspect(ctx, "acl/nopublish")
	}
	if err != nil || free.Verdict != admin.Free {
		t.Errorf("after Unlock without +publish: %v %+v, want free", err, free)
	}
	if !strings.Contains(logs.String(), "ACL SETUSER <user> +publish") {
		t.Errorf("no warning naming +publish in the log: %q", logs.String())
	}
	in, _ := dialT(t, urls["nomulti"]).Admin().Inspect(ctx, "acl/job")
	if err := in.Nodes[0].Err; !errors.As(err, &pe) || pe.Command != "multi" {
		t.Errorf("Inspect without +multi: %v", err)
	}
	_, err = dialT(t, urls["otherprefix"]).Mutex("x")
	if err == nil {
		m, _ := dialT(t, urls["otherprefix"]).Mutex("x")
		_, err = m.TryLock(ctx)
	}
	if !errors.As(err, &pe) || pe.Command != "" || !strings.Contains(err.Error(), "~quorumlock:*") {
		t.Errorf("TryLock outside the user's key pattern: %v", err)
	}
}

// A permission no retry can grant, or a wrong password, ends Lock at once
// with ErrPermanent and names what is missing, instead of waiting for ever.
func TestPermanentErrorsEndLock(t *testing.T) {
	noEvalsha := strings.Replace(aclLockClient, " +evalsha", "", 1)
	urls := aclServers(t, 3, map[string]string{"noevalsha": noEvalsha})
	wrongPass := strings.ReplaceAll(urls["noevalsha"], "noevalsha-pw@", "not-the-pw@")
	// In Functions mode the client calls FCALL, which the user may not run
	// either: that is the permission to name.
	script := "evalsha"
	if testmode.Functions {
		script = "fcall"
	}
	for _, tc := range []struct{ name, urls, want, refused string }{
		{"no +evalsha", urls["noevalsha"], "+" + script, script},
		{"wrong password", wrongPass, "WRONGPASS", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			m, err := dialT(t, tc.urls, quorum.WithRetryInterval(100*time.Millisecond)).Mutex("acl/permanent")
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Lock(ctx)
			if !errors.Is(err, quorum.ErrPermanent) || !errors.Is(err, quorum.ErrNotObtained) || ctx.Err() != nil {
				t.Fatalf("Lock: %v (ctx %v), want ErrPermanent before the deadline", err, ctx.Err())
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Lock: %q, want one line naming %s", err, tc.want)
			}
			// The ACL's refusal reaches the caller as the public type.
			var pe *node.PermissionError
			if found := errors.As(err, &pe); found != (tc.refused != "") || found && pe.Command != tc.refused {
				t.Errorf("errors.As(%q, *node.PermissionError) = %v %+v, want the refused command %q", err, found, pe, tc.refused)
			}
		})
	}
}
