package quorum_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testmode"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// QUORUMLOCK_TEST_FUNCTIONS=1 (make test-functions) runs every test of the
// package in Functions mode: node.New reads the switch.
func init() { testmode.FromEnv() }

// aclFunctionsClient is aclLockClient for Functions mode: FCALL instead
// of EVALSHA, EVAL and SCRIPT LOAD (docs/operations.md). A user that may
// not FUNCTION LOAD works once an operator loaded the library; with
// +function|load it loads it itself.
var aclFunctionsClient = strings.Replace(aclLockClient, "+evalsha +eval +script|load", "+fcall", 1)

// aclForMode adds what Functions mode needs to every user's rules when the
// tests run in that mode (QUORUMLOCK_TEST_FUNCTIONS=1), so that the tests
// written for EVALSHA's ACL check the same things there.
func aclForMode(users map[string]string) map[string]string {
	if testmode.Functions {
		for u, r := range users {
			users[u] = r + " +fcall +function|load"
		}
	}
	return users
}

// scriptCalls sums EVAL, EVALSHA and FCALL calls over the servers (INFO
// commandstats).
func scriptCalls(t *testing.T, servers []*localredis.Server) (eval, fcall int) {
	t.Helper()
	for _, s := range servers {
		c := s.Client()
		info, err := c.Info(t.Context(), "commandstats").Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			n := 0
			for _, d := range calls {
				n = n*10 + int(d-'0')
			}
			switch name {
			case "cmdstat_eval", "cmdstat_evalsha":
				eval += n
			case "cmdstat_fcall":
				fcall += n
			}
		}
	}
	return eval, fcall
}

// exercise runs what a lock user does, on c: Lock with a waiter woken by
// the unlock message, Extend, fencing tokens that increase, the read-write
// and the fair lock. between runs between the steps (a FUNCTION FLUSH).
func exercise(t *testing.T, c *quorum.Client, fencing bool, between func()) {
	t.Helper()
	ctx := t.Context()
	m, _ := c.Mutex("fn/job")
	l1, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	between()
	got := make(chan error, 1)
	go func() {
		l2, err := m.Lock(ctx)
		if err == nil {
			if fencing && l2.Token() <= l1.Token() {
				err = errors.New("token did not increase")
			}
			err = errors.Join(err, l2.Unlock(ctx))
		}
		got <- err
	}()
	// Let the waiter start waiting, so that the unlock below wakes it. From
	// outside the package nothing tells that it waits (the package's own
	// tests count its attempts); the steps hold either way.
	time.Sleep(100 * time.Millisecond)
	if err := l1.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	between()
	if err := l1.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	between()
	rw, _ := c.RWMutex("fn/rw")
	r, err := rw.RLock(ctx)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	between()
	if err := r.Unlock(ctx); err != nil {
		t.Fatalf("RUnlock: %v", err)
	}
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatalf("RWMutex.Lock: %v", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("RWMutex.Unlock: %v", err)
	}
	between()
	f, _ := c.FairMutex("fn/fair")
	fl, err := f.Lock(ctx)
	if err != nil {
		t.Fatalf("FairMutex.Lock: %v", err)
	}
	between()
	if err := fl.Unlock(ctx); err != nil {
		t.Fatalf("FairMutex.Unlock: %v", err)
	}
	e, _ := c.Election("fn/elect")
	term, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	between()
	if err := term.Proclaim(ctx, "b"); err != nil {
		t.Fatalf("Proclaim: %v", err)
	}
	between()
	if li, err := e.Leader(ctx); err != nil || li.Value != "b" || li.Token != term.Token() {
		t.Fatalf("Leader: %+v %v", li, err)
	}
	between()
	if err := term.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// In Functions mode the whole lock runs on FCALL alone, and a node that
// lost the library (FUNCTION FLUSH: as a restart without persistence) is
// given it back by the next call.
func TestFunctionsMode(t *testing.T) {
	servers, clients := testutil.Servers(t, 3, localredis.Config{})
	admins := testutil.Clients(t, servers, nil)
	c, err := quorum.New(clients, quorum.WithFunctions(true), quorum.WithFencing(true),
		quorum.WithTTL(2*time.Second), quorum.WithRetryInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	flushes := 0
	exercise(t, c, true, func() {
		// One node, then another: a quorum keeps the library while the
		// flushed node gets it back. Calls that answered after their
		// quorum finish first: a flush between a late call's reload and
		// its retry would make it fail on that node (one retry only), and
		// a release failed so leaves its key to the TTL.
		quorum.WaitCalls(c)
		if err := admins[flushes%len(admins)].FunctionFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		flushes++
	})
	// Every node, at once: the lock still works.
	quorum.WaitCalls(c)
	for _, a := range admins {
		if err := a.FunctionFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	exercise(t, c, true, func() {})
	// Inspect reads locks with a function too, after another flush.
	quorum.WaitCalls(c)
	if err := admins[0].FunctionFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if in, err := c.Admin().Inspect(t.Context(), "fn/job"); err != nil || in.Verdict != admin.Free || in.Answered != 3 {
		t.Fatalf("Inspect: %v %+v", err, in)
	}
	eval, fcall := scriptCalls(t, servers)
	if eval != 0 || fcall == 0 {
		t.Fatalf("EVAL/EVALSHA %d, FCALL %d: want FCALL only", eval, fcall)
	}
}

// The least-privilege ACL without EVAL and EVALSHA: with Functions on, a
// lock user that may only FCALL locks (after an operator loaded the
// library; or by itself with +function|load); with Functions off it fails
// with one line naming the missing permission and the option.
func TestFunctionsLeastPrivilegeACL(t *testing.T) {
	ctx := t.Context()
	urls := aclServers(t, 3, map[string]string{
		"fcall":  aclFunctionsClient,
		"loader": aclFunctionsClient + " +function|load",
	})
	opts := []quorum.Option{quorum.WithTTL(2 * time.Second), quorum.WithRetryInterval(200 * time.Millisecond)}
	fcallOnly := func(fencing bool) []quorum.Option {
		return append(append([]quorum.Option(nil), opts...), quorum.WithFunctions(true), quorum.WithFencing(fencing))
	}

	// Before the library is on the nodes, the user that may not load it is
	// told how to get it there.
	m, _ := dialT(t, urls["fcall"], fcallOnly(true)...).Mutex("acl/early")
	_, err := m.TryLock(ctx)
	var pe *node.PermissionError
	if !errors.As(err, &pe) || pe.Command != "function|load" || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "+function|load") || !strings.Contains(err.Error(), "LoadFunctions") {
		t.Fatalf("TryLock before the library was loaded: %v", err)
	}

	// A user with +function|load loads it itself (its client's start).
	for _, fencing := range []bool{false, true} {
		exercise(t, dialT(t, urls["loader"], fcallOnly(fencing)...), fencing, func() {})
	}
	// The operator's step, then the FCALL-only user.
	adminURLs := strings.NewReplacer("fcall:fcall-pw@", "default:admin-pw@").Replace(urls["fcall"])
	if err := dialT(t, adminURLs).Admin().LoadFunctions(ctx); err != nil {
		t.Fatalf("LoadFunctions: %v", err)
	}
	for _, fencing := range []bool{false, true} {
		exercise(t, dialT(t, urls["fcall"], fcallOnly(fencing)...), fencing, func() {})
	}

	// Functions off: one line naming EVALSHA, how to grant it, and the
	// option that needs no EVAL.
	off := dialT(t, urls["fcall"], append(opts, quorum.WithFunctions(false), quorum.WithFencing(true))...)
	m, _ = off.Mutex("acl/off")
	_, err = m.TryLock(ctx)
	if !errors.As(err, &pe) || pe.Command != "evalsha" || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "+evalsha") || !strings.Contains(err.Error(), "WithFunctions(true)") {
		t.Fatalf("TryLock with Functions off and no EVALSHA: %v", err)
	}
	t.Logf("Functions off, no EVALSHA: %v", err)
	// Without fencing the fast path (SET NX) needs no script, but Unlock
	// does.
	m, _ = dialT(t, urls["fcall"], append(opts, quorum.WithFunctions(false), quorum.WithFencing(false))...).Mutex("acl/off2")
	l, err := m.TryLock(ctx)
	if err == nil {
		err = l.Unlock(context.Background())
	}
	if !errors.As(err, &pe) || pe.Command != "evalsha" {
		t.Fatalf("Unlock with Functions off and no EVALSHA: %v", err)
	}
}
