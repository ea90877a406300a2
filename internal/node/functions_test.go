package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testmode"
	"github.com/quorumlock/quorumlock/localredis"
)

// QUORUMLOCK_TEST_FUNCTIONS=1 (make test-functions) runs every test of the
// package in Functions mode.
func init() { testmode.FromEnv() }

// startFunctions is start with Functions mode on (whatever the environment
// says).
func startFunctions(t *testing.T) (*localredis.Server, *Node, *redis.Client) {
	t.Helper()
	s := localredis.StartT(t, localredis.Config{})
	n, c := nodeOn(t, s, WithFunctions(true))
	return s, n, c
}

// commandCalls reads INFO commandstats: calls per command ("fcall", ...).
func commandCalls(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				var n int
				for _, d := range v {
					n = n*10 + int(d-'0')
				}
				out[cmd] = n
			}
		}
	}
	return out
}

func TestFunctionsLibrary(t *testing.T) {
	lib := library()
	if !strings.HasPrefix(lib.name, FunctionsLibraryPrefix) || len(lib.name) != len(FunctionsLibraryPrefix)+12 {
		t.Fatalf("library name %q", lib.name)
	}
	// One function per script, each named after the library's version.
	if len(lib.fn) != len(scriptNames) {
		t.Fatalf("%d functions for %d scripts", len(lib.fn), len(scriptNames))
	}
	for _, s := range []*redis.Script{acquireScript, releaseScript, rwAcquireScript, fairTicketScript, forceFinishScript} {
		if f := fname(s.Hash()); !strings.HasPrefix(f, lib.name+"_") {
			t.Errorf("function %q is not named after the library", f)
		}
	}
	if got := strings.Count(lib.code, "flags = {"); got != len(functionFlags) {
		t.Errorf("%d functions with flags, want %d", got, len(functionFlags))
	}
	for name := range functionFlags {
		if _, ok := lib.scripts[lib.name+"_"+strings.ReplaceAll(name, "-", "_")]; !ok {
			t.Errorf("flags for %q, which is no script", name)
		}
	}
}

// Every kind of call runs through FCALL, never EVAL or EVALSHA, and a node
// that lost the library (FUNCTION FLUSH) gets it back at the next call.
func TestFunctionsMode(t *testing.T) {
	_, n, c := startFunctions(t)
	ctx := t.Context()
	flush := func() {
		t.Helper()
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var r string // the round: names differ between the two
	calls := []struct {
		name string
		run  func() error
	}{
		{"acquire with fencing", func() error {
			ok, _, fence, err := n.Lock("f/plain"+r, "o1", "o1.a", true).Acquire(ctx, 5*time.Second)
			if err == nil && (!ok || fence < 1) {
				err = errors.New("not granted, or no fencing count")
			}
			return err
		}},
		{"taken", func() error {
			ok, rem, _, err := n.Lock("f/plain"+r, "o2", "o2.a", true).Acquire(ctx, 5*time.Second)
			if err == nil && (ok || rem <= 0) {
				err = errors.New("granted to a second owner")
			}
			return err
		}},
		{"extend", func() error {
			ok, err := n.Lock("f/plain"+r, "o1", "o1.a", true).Extend(ctx, 5*time.Second)
			if err == nil && !ok {
				err = errors.New("not extended")
			}
			return err
		}},
		{"fence", func() error {
			ok, err := n.Lock("f/plain"+r, "o1", "o1.a", true).Fence(ctx, 7)
			if err == nil && !ok {
				err = errors.New("not fenced")
			}
			return err
		}},
		{"extend checked", func() error {
			ok, ch, err := n.Lock("f/plain"+r, "o1", "o1.a", true).ExtendChecked(ctx, 5*time.Second, Checks{Server: true})
			if err == nil && (!ok || ch.RunID == "") {
				err = errors.New("not extended, or no run_id")
			}
			return err
		}},
		{"inspect", func() error {
			st, err := n.Inspect(ctx, "f/plain"+r)
			if err == nil && (!st.Present || st.Fence < 7) {
				err = errors.New("lock not seen with its fence")
			}
			return err
		}},
		{"release", func() error {
			ok, err := n.Lock("f/plain"+r, "o1", "o1.a", true).Release(ctx)
			if err == nil && !ok {
				err = errors.New("not released")
			}
			return err
		}},
		{"read lock", func() error {
			ok, _, _, err := n.RWLock("f/rw"+r, "r1", "r1.a", false, true).Acquire(ctx, 5*time.Second)
			if err == nil && !ok {
				err = errors.New("read share not granted")
			}
			return err
		}},
		{"write lock refused", func() error {
			ok, _, _, err := n.RWLock("f/rw"+r, "w1", "w1.a", true, true).Acquire(ctx, 5*time.Second)
			if err == nil && ok {
				err = errors.New("write share granted beside a reader")
			}
			return err
		}},
		{"read extend", func() error {
			ok, err := n.RWLock("f/rw"+r, "r1", "r1.a", false, true).Extend(ctx, 5*time.Second)
			if err == nil && !ok {
				err = errors.New("read share not extended")
			}
			return err
		}},
		{"read release", func() error {
			ok, err := n.RWLock("f/rw"+r, "r1", "r1.a", false, true).Release(ctx)
			if err == nil && !ok {
				err = errors.New("read share not released")
			}
			return err
		}},
		{"fair ticket", func() error {
			v, err := n.TakeTicket(ctx, "f/fair"+r, "a", 5*time.Second)
			if err == nil && v != 1 {
				err = errors.New("ticket not 1")
			}
			return err
		}},
		{"fair acquire", func() error {
			ok, _, _, err := fairLock(n, "f/fair"+r, "a", 1, Enqueue, 5*time.Second).Acquire(ctx, 5*time.Second)
			if err == nil && !ok {
				err = errors.New("first in line not granted")
			}
			return err
		}},
		{"fair queue", func() error {
			q, err := n.Queue(ctx, "f/fair"+r)
			if err == nil && (len(q) != 1 || q[0].Waiter != "a") {
				err = errors.New("line is not [a]")
			}
			return err
		}},
		{"fair release", func() error {
			ok, err := fairLock(n, "f/fair"+r, "a", 1, Enqueue, 5*time.Second).Release(ctx)
			if err == nil && !ok {
				err = errors.New("not released")
			}
			return err
		}},
		{"fair leave", func() error { return n.Leave(ctx, "f/fair"+r, "a", 5*time.Second) }},
		{"force", func() error {
			_, err := n.ForceRelease(ctx, "f/fair"+r, Force{By: "test", Hold: time.Second})
			return errors.Join(err, n.FinishForce(ctx, "f/fair"+r))
		}},
	}
	for _, flushed := range []bool{false, true} {
		r = fmt.Sprint(flushed)
		for _, call := range calls {
			if flushed {
				flush()
			}
			if err := call.run(); err != nil {
				t.Fatalf("%s (library flushed before: %v): %v", call.name, flushed, err)
			}
		}
	}
	got := commandCalls(t, c)
	if got["fcall"] == 0 || got["eval"] != 0 || got["evalsha"] != 0 {
		t.Fatalf("commands: fcall %d, eval %d, evalsha %d; want only fcall", got["fcall"], got["eval"], got["evalsha"])
	}
	// Every flush was followed by a load (and the first call's).
	if got["function|load"] < len(calls)+1 {
		t.Fatalf("%d FUNCTION LOADs for %d flushes", got["function|load"], len(calls))
	}
}

// An old version's library stays beside the current one until an operator
// deletes it; the current one is kept.
func TestDeleteOtherFunctions(t *testing.T) {
	_, n, c := startFunctions(t)
	ctx := t.Context()
	if err := n.LoadFunctions(ctx); err != nil {
		t.Fatal(err)
	}
	old := "#!lua name=quorumlock_000000000000\nredis.register_function('quorumlock_000000000000_x', function() return 1 end)"
	other := "#!lua name=app\nredis.register_function('app_x', function() return 1 end)"
	for _, code := range []string{old, other} {
		if err := c.FunctionLoad(ctx, code).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := n.DeleteOtherFunctions(ctx)
	if err != nil || len(got) != 1 || got[0] != "quorumlock_000000000000" {
		t.Fatalf("deleted %v, %v", got, err)
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	if len(names) != 2 || !strings.Contains(strings.Join(names, " "), FunctionsLibrary()) || !strings.Contains(strings.Join(names, " "), "app") {
		t.Fatalf("libraries left: %v", names)
	}
}

// A command a function may not run is named as a script's is, and a user
// who may not load the library is told how to get it loaded.
func TestFunctionsPermissionError(t *testing.T) {
	s, n, c := startFunctions(t)
	ctx := t.Context()
	rules := "resetkeys ~quorumlock:* resetchannels &quorumlock:* -@all +hello +ping +fcall +time +set +get +del +exists +pttl +pexpire +hset +hget +hmget +hdel +hexists +hgetall +hincrby +hlen +incr"
	args := []any{"ACL", "SETUSER", "u", "reset", "on", ">pw"}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	o := s.Options()
	o.Username, o.Password = "u", "pw"
	uc := redis.NewClient(o)
	t.Cleanup(func() { _ = uc.Close() })
	un, _ := New(uc, WithFunctions(true))
	t.Cleanup(func() { _ = un.Close() })

	var pe *PermissionError
	_, _, _, err := un.Lock("p", "o", "o.a", true).Acquire(ctx, time.Second)
	if !errors.As(err, &pe) || pe.Command != "function|load" || !strings.Contains(err.Error(), "LoadFunctions") {
		t.Fatalf("acquire before the library was loaded: %v", err)
	}
	if err := n.LoadFunctions(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, _, err := un.Lock("p", "o", "o.a", true).Acquire(ctx, time.Second); err != nil || !ok {
		t.Fatalf("acquire after an operator loaded the library: %v %v", ok, err)
	}
	// Without +publish the release script stops at its last command, the
	// wake-up message: the lock is gone, the lost message only counted.
	ok, err := un.Lock("p", "o", "o.a", true).Release(context.Background())
	if err != nil || !ok {
		t.Fatalf("release without +publish: %v %v, want released", ok, err)
	}
	if k := un.WakeLost(); k != 1 {
		t.Errorf("WakeLost = %d, want 1", k)
	}
	if n, err := c.Exists(ctx, un.Keys("p").Lock).Result(); err != nil || n != 0 {
		t.Errorf("the lock key is still there after the release (%d, %v)", n, err)
	}
}

// A node out of memory still lets a holder extend and give its lock back,
// in Functions mode as with EVAL (allow-oom), and refuses new grants in
// both.
func TestFunctionsOutOfMemoryParity(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	admin := s.Client()
	t.Cleanup(func() { _ = admin.Close() })
	ctx := t.Context()
	for _, funcs := range []bool{false, true} {
		c := s.Client()
		n, err := New(c, WithFunctions(funcs))
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprint("oom/", funcs)
		l := n.Lock(name, "o", "o.a", true)
		if ok, _, _, err := l.Acquire(ctx, 5*time.Second); err != nil || !ok {
			t.Fatalf("functions %v: acquire: %v %v", funcs, ok, err)
		}
		rw := n.RWLock(name+"/rw", "r", "r.a", false, true)
		if ok, _, _, err := rw.Acquire(ctx, 5*time.Second); err != nil || !ok {
			t.Fatalf("functions %v: read acquire: %v %v", funcs, ok, err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Fatal(err)
		}
		_, _, _, err = n.Lock(name+"/new", "p", "p.a", true).Acquire(ctx, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Errorf("functions %v: a new grant while out of memory: %v", funcs, err)
		}
		if ok, err := l.Extend(ctx, 5*time.Second); err != nil || !ok {
			t.Errorf("functions %v: extend while out of memory: %v %v", funcs, ok, err)
		}
		if ok, err := rw.Release(ctx); err != nil || !ok {
			t.Errorf("functions %v: read release while out of memory: %v %v", funcs, ok, err)
		}
		if ok, err := l.Release(ctx); err != nil || !ok {
			t.Errorf("functions %v: release while out of memory: %v %v", funcs, ok, err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
			t.Fatal(err)
		}
		_ = n.Close()
		_ = c.Close()
	}
}
