package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
)

// nodesT starts n servers and wraps a client of each as a Node, closed
// at the test's end.
func nodesT(t *testing.T, n int, opts ...node.Option) ([]*node.Node, []*redis.Client) {
	t.Helper()
	var nodes []*node.Node
	var clients []*redis.Client
	for _, s := range localredis.StartNT(t, n, localredis.Config{}) {
		rc := s.Client()
		nd, err := node.New(rc, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nd.Close(); _ = rc.Close() })
		nodes = append(nodes, nd)
		clients = append(clients, rc)
	}
	return nodes, clients
}

// attempt makes one fenced acquisition attempt of name by owner over nodes.
func attempt(t *testing.T, nodes []*node.Node, name, owner string) *multilock.MultiLock {
	t.Helper()
	var ls []multilock.Locker
	for _, n := range nodes {
		l, err := n.Lock(name, owner, true)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	m, err := multilock.New(ls, multilock.WithFencing(true))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Locks driven by hand over three nodes exclude each other, hand out
// increasing fencing tokens, live in the keys Keys names, and the
// sub-locks have the abilities Lock documents.
func TestLockByHand(t *testing.T) {
	ctx := t.Context()
	nodes, clients := nodesT(t, 3, node.WithPrefix("app:"))
	const name = "orders/42"

	alice := attempt(t, nodes, name, "alice")
	granted, _, token, err := alice.Acquire(ctx, 10*time.Second)
	if err != nil || !granted || token <= 0 {
		t.Fatalf("alice: granted %v, token %d, %v", granted, token, err)
	}
	stored := 0 // nodes whose counter is the token: a quorum at least
	for i, rc := range clients {
		k := nodes[i].Keys(name)
		if !strings.HasPrefix(k.Lock, "app:{"+name+"}") || k.Fence == k.Lock || k.Channel == k.Lock || k.Forced == k.Lock {
			t.Fatalf("Keys(%q) = %+v", name, k)
		}
		if ttl, err := rc.PTTL(ctx, k.Lock).Result(); err != nil || ttl <= 0 {
			t.Errorf("node %d: PTTL %s = %v, %v: want the held lock with its TTL", i, k.Lock, ttl, err)
		}
		if v, err := rc.Get(ctx, k.Fence).Int64(); err == nil && v == token {
			stored++
		}
	}
	if stored < 2 {
		t.Errorf("the token %d is the fencing counter (Keys.Fence) on %d of 3 nodes, want a quorum", token, stored)
	}

	bob := attempt(t, nodes, name, "bob")
	granted, remaining, _, err := bob.Acquire(ctx, 10*time.Second)
	if granted || !errors.Is(err, multilock.ErrNotObtained) || remaining <= 0 {
		t.Fatalf("bob while alice holds: granted %v, remaining %v, %v", granted, remaining, err)
	}
	if ok, err := alice.Release(ctx); !ok || err != nil {
		t.Fatalf("alice's release: %v %v", ok, err)
	}
	bob = attempt(t, nodes, name, "bob")
	granted, _, next, err := bob.Acquire(ctx, 10*time.Second)
	if err != nil || !granted || next <= token {
		t.Fatalf("bob after alice: granted %v, token %d after %d, %v", granted, next, token, err)
	}
	if ok, err := bob.Release(ctx); !ok || err != nil {
		t.Fatalf("bob's release: %v %v", ok, err)
	}

	l, err := nodes[0].Lock(name, "carol", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(multilock.Fencer); !ok {
		t.Error("Lock's sub-lock is no multilock.Fencer")
	}
	if _, ok := l.(multilock.Rollbacker); !ok {
		t.Error("Lock's sub-lock is no multilock.Rollbacker")
	}
	if _, ok := l.(multilock.FenceKeeper); !ok {
		t.Error("Lock's sub-lock is no multilock.FenceKeeper")
	}
	if d, ok := l.(multilock.DeadlineBound); !ok || !d.BoundByDeadline() {
		t.Error("Lock's sub-lock on a client made with deadlines on is not multilock.DeadlineBound")
	}
	if s := fmt.Sprint(l); s != nodes[0].Name() || s != nodes[0].String() {
		t.Errorf("sub-lock prints %q, node name %q", s, nodes[0].Name())
	}
}

// Readers share a read-write lock, a writer is refused while they hold
// it, and a plain lock of the same name is refused too.
func TestRWLockByHand(t *testing.T) {
	ctx := t.Context()
	nodes, _ := nodesT(t, 1)
	n := nodes[0]
	acquire := func(l multilock.Locker, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		granted, _, _, err := l.Acquire(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return granted
	}
	if !acquire(n.RWLock("report", "r1", false, false)) || !acquire(n.RWLock("report", "r2", false, false)) {
		t.Fatal("two readers were not both granted")
	}
	if acquire(n.RWLock("report", "w", true, false)) {
		t.Error("a writer was granted while readers hold the lock")
	}
	if acquire(n.Lock("report", "plain", false)) {
		t.Error("a plain lock was granted while readers hold the read-write lock of its name")
	}
	if !acquire(n.RWLock("other", "w", true, false)) || acquire(n.RWLock("other", "r", false, false)) {
		t.Error("a writer alone: want it granted and a reader refused")
	}
}

func TestLockRefusesBadNames(t *testing.T) {
	nodes, _ := nodesT(t, 1)
	for _, c := range []struct{ name, owner, want string }{
		{"", "alice", "empty lock name"},
		{"a\x00b", "alice", "lock name must not contain a NUL"},
		{"a", "", "empty owner"},
		{"a", "al\x00ice", "owner must not contain a NUL"},
	} {
		if _, err := nodes[0].Lock(c.name, c.owner, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Lock(%q, %q): %v, want %q", c.name, c.owner, err, c.want)
		}
		if _, err := nodes[0].RWLock(c.name, c.owner, true, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RWLock(%q, %q): %v, want %q", c.name, c.owner, err, c.want)
		}
	}
}

// A command the node's ACL refuses comes back as a PermissionError that
// errors.As finds, naming the command.
func TestPermissionError(t *testing.T) {
	ctx := t.Context()
	s := localredis.StartT(t, localredis.Config{})
	admin := s.Client()
	defer admin.Close()
	// Everything but SET, which the plain lock's fast path sends first.
	if err := admin.Do(ctx, "ACL", "SETUSER", "noset", "reset", "on", ">pw", "~*", "&*", "+@all", "-set").Err(); err != nil {
		t.Fatal(err)
	}
	opts := node.Options(s.Addr())
	opts.Username, opts.Password = "noset", "pw"
	rc := redis.NewClient(opts)
	defer rc.Close()
	n, err := node.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l, err := n.Lock("acl", "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = l.Acquire(ctx, time.Second)
	var pe *node.PermissionError
	if !errors.As(err, &pe) || pe.Command != "set" || pe.Err == nil {
		t.Fatalf("Acquire without +set: %v (%T), want a *node.PermissionError for set", err, err)
	}
	if pe.Error() != err.Error() || !strings.Contains(pe.Error(), "+set") || !errors.Is(pe, pe.Err) {
		t.Errorf("PermissionError says %q, the error %q", pe.Error(), err)
	}
	wrapped := fmt.Errorf("outer: %w", &multilock.NodeError{Node: n.Name(), Err: err})
	if !errors.As(wrapped, &pe) || pe.Command != "set" {
		t.Errorf("errors.As through wrapping: %v", wrapped)
	}
}

func ExampleNode_Lock() {
	ctx := context.Background()
	var subs []multilock.Locker
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rc := redis.NewClient(node.Options(addr))
		defer rc.Close()
		n, err := node.New(rc)
		if err != nil {
			panic(err)
		}
		defer n.Close()
		l, err := n.Lock("orders/42", "billing-1", true)
		if err != nil {
			panic(err)
		}
		subs = append(subs, l)
	}
	m, err := multilock.New(subs, multilock.WithFencing(true))
	if err != nil {
		panic(err)
	}
	if granted, _, token, err := m.Acquire(ctx, 30*time.Second); granted {
		defer m.Release(ctx)
		fmt.Println("held with token", token)
	} else {
		fmt.Println("not held:", err)
	}
}
