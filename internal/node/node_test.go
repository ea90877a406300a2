package node

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/localredis"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func start(t *testing.T) (*localredis.Server, *Node) {
	t.Helper()
	s := localredis.StartT(t, localredis.Config{})
	n, _ := nodeOn(t, s)
	return s, n
}

// nodeOn is a Node with opts on a new client of s; both are closed when
// the test ends.
func nodeOn(t *testing.T, s *localredis.Server, opts ...Option) (*Node, *redis.Client) {
	t.Helper()
	c := s.Client()
	t.Cleanup(func() { _ = c.Close() })
	n, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, c
}

func TestKeysShareOneClusterSlot(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	n, _ := New(c)
	for _, name := range []string{"orders/42", "a{b}c", "x"} {
		k := n.Keys(name)
		if hashTag(k.Lock) != hashTag(k.Fence) || hashTag(k.Lock) != hashTag(k.Channel) {
			t.Fatalf("%q: keys %v do not share a hash tag", name, k)
		}
	}
}

// hashTag is the part of a key Redis Cluster hashes.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						return key[i+1 : j]
					}
					return key
				}
			}
			return key
		}
	}
	return key
}

func TestAcquireScript(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	presetFence(t, n, "l") // counts from fenceSeeded (a new counter starts at the clock: TestFenceSeed)
	a1 := n.Lock("l", "alice", "att-1", true)
	ok, _, fence, err := a1.Acquire(ctx, time.Second)
	if !ok || err != nil || fence != fenceSeeded+1 {
		t.Fatalf("first acquire: %v %d %v", ok, fence, err)
	}
	// A retried call of the same attempt (lost reply): granted again, its
	// share counted once. The fencing fast path's INCR runs before the
	// script answers, so the counter it reports may be larger, never
	// smaller.
	ok, _, fence2, err := a1.Acquire(ctx, time.Second)
	if !ok || err != nil || fence2 < fence {
		t.Fatalf("retried acquire: %v %d %v", ok, fence2, err)
	}
	st, _ := n.Inspect(ctx, "l")
	if st.Holders["alice"] != 1 || st.Attempts != 1 {
		t.Fatalf("after a retried call: %+v, want count 1", st)
	}
	// Another attempt of the same owner: reentrant, count 2.
	a2 := n.Lock("l", "alice", "att-2", true)
	if ok, _, _, _ := a2.Acquire(ctx, time.Second); !ok {
		t.Fatal("reentrant acquire refused")
	}
	st, _ = n.Inspect(ctx, "l")
	if st.Holders["alice"] != 2 {
		t.Fatalf("reentrant count %d, want 2", st.Holders["alice"])
	}
	// Another owner: refused with the remaining TTL.
	b := n.Lock("l", "bob", "att-3", true)
	ok, rem, _, err := b.Acquire(ctx, time.Second)
	if ok || err != nil || rem <= 0 || rem > time.Second {
		t.Fatalf("other owner: granted=%v remaining=%v err=%v", ok, rem, err)
	}
	// Non-owners cannot release or extend.
	if ok, _ := b.Release(ctx); ok {
		t.Fatal("non-owner released")
	}
	if ok, _ := b.Extend(ctx, time.Second); ok {
		t.Fatal("non-owner extended")
	}
	if ok, _ := b.Fence(ctx, 99); ok {
		t.Fatal("non-owner wrote a fencing token")
	}
	// Releasing one attempt keeps the other's share.
	if ok, _ := a1.Release(ctx); !ok {
		t.Fatal("release of attempt 1 failed")
	}
	if ok, _ := a1.Release(ctx); ok {
		t.Fatal("attempt 1 released twice")
	}
	if ok, _, _, _ := b.Acquire(ctx, time.Second); ok {
		t.Fatal("lock free while attempt 2 holds a share")
	}
	if ok, _ := a2.Fence(ctx, fenceSeeded+100); !ok {
		t.Fatal("holder could not write its token")
	}
	if ok, _ := a2.Fence(ctx, fenceSeeded+3); !ok {
		t.Fatal("fence write refused")
	}
	st, _ = n.Inspect(ctx, "l")
	if st.Fence != fenceSeeded+100 {
		t.Fatalf("fence counter %d, want %d (set-if-greater)", st.Fence, fenceSeeded+100)
	}
	if ok, _ := a2.Release(ctx); !ok {
		t.Fatal("release of attempt 2 failed")
	}
	st, _ = n.Inspect(ctx, "l")
	if st.Present {
		t.Fatalf("lock still present after all shares released: %+v", st)
	}
	ok, _, fence, _ = b.Acquire(ctx, time.Second)
	if !ok || fence != fenceSeeded+101 {
		t.Fatalf("next holder: granted=%v fence=%d, want %d", ok, fence, fenceSeeded+101)
	}
}

func TestExpiryAndExtend(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a := n.Lock("e", "alice", "1", false)
	if ok, _, _, _ := a.Acquire(ctx, 200*time.Millisecond); !ok {
		t.Fatal("acquire")
	}
	if ok, _ := a.Extend(ctx, 2*time.Second); !ok {
		t.Fatal("extend")
	}
	st, _ := n.Inspect(ctx, "e")
	if st.TTL < time.Second {
		t.Fatalf("ttl after extend %v", st.TTL)
	}
	b := n.Lock("f", "bob", "2", false)
	if ok, _, _, _ := b.Acquire(ctx, 100*time.Millisecond); !ok {
		t.Fatal("acquire f")
	}
	time.Sleep(250 * time.Millisecond) // time passing is the test: the 100 ms TTL runs out
	if ok, _ := b.Extend(ctx, time.Second); ok {
		t.Fatal("extend after expiry re-acquired the lock")
	}
	if st, _ := n.Inspect(ctx, "f"); st.Present {
		t.Fatal("expired lock present")
	}
}

// The lock is taken by Acquire's fast path (a string, fast_test.go), so
// this also shows that a fast-path release wakes waiters.
func TestReleasePublishesAndWatchWakes(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a := n.Lock("w", "alice", "1", false)
	if ok, _, _, _ := a.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("acquire")
	}
	sig1 := make(chan struct{}, 1)
	sig2 := make(chan struct{}, 1)
	w1 := n.watch("w", sig1, nil, false)
	w2 := n.watch("w", sig2, nil, false)
	for _, w := range []*Watch{w1, w2} {
		select {
		case <-w.Ready():
		case <-time.After(5 * time.Second):
			t.Fatal("subscription not confirmed")
		}
	}
	if ok, _ := a.Release(ctx); !ok {
		t.Fatal("release")
	}
	select {
	case <-sig1:
	case <-time.After(5 * time.Second):
		t.Fatal("first waiter not woken")
	}
	select {
	case <-sig2:
		t.Fatal("second waiter woken too: want only the longest-waiting one")
	case <-time.After(100 * time.Millisecond):
	}
	// The first waiter gives up without taking the lock: its wake-up passes on.
	w1.Stop(true)
	select {
	case <-sig2:
	case <-time.After(5 * time.Second):
		t.Fatal("wake-up not handed on when the woken waiter left")
	}
	w2.Stop(false)
}

// The subscriber reads its connection itself (watch.go receive): when the
// connection drops, go-redis reconnects and re-subscribes, the waiter is
// woken to look again (messages may have been lost), and later unlocks
// still wake it.
func TestWatchSurvivesPubSubReconnect(t *testing.T) {
	s, n := start(t)
	ctx := t.Context()
	a := n.Lock("rc", "alice", "1", false)
	if ok, _, _, _ := a.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("acquire")
	}
	sig := make(chan struct{}, 1)
	w := n.watch("rc", sig, nil, false)
	defer w.Stop(false)
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	admin := s.Client()
	defer admin.Close()
	if killed, err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Result(); err != nil || killed != 1 {
		t.Fatalf("kill the pub/sub connection: %v, %v killed", err, killed)
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken after the pub/sub connection came back")
	}
	if ok, _ := a.Release(ctx); !ok {
		t.Fatal("release")
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("unlock after the reconnect did not wake the waiter")
	}
}

// A pub/sub connection that stays quiet is pinged (watch.go health), and
// the pong does not disturb the wake-ups.
func TestQuietPubSubIsPinged(t *testing.T) {
	defer func(d time.Duration) { healthEvery = d }(healthEvery)
	healthEvery = 50 * time.Millisecond
	s, n := start(t)
	ctx := t.Context()
	a := n.Lock("hp", "alice", "1", false)
	if ok, _, _, _ := a.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("acquire")
	}
	sig := make(chan struct{}, 1)
	w := n.watch("hp", sig, nil, false)
	defer w.Stop(false)
	<-w.Ready()
	admin := s.Client()
	defer admin.Close()
	pings := func() string {
		info, err := admin.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_ping:") {
				return strings.TrimSpace(line)
			}
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for pings() == "" {
		if time.Now().After(deadline) {
			t.Fatal("a quiet pub/sub connection was never pinged")
		}
		time.Sleep(20 * time.Millisecond) // poll: the health check pings on its own timer
	}
	if ok, _ := a.Release(ctx); !ok {
		t.Fatal("release")
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("unlock after pings did not wake the waiter")
	}
}

func TestForceRelease(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	a := n.Lock("fr", "alice", "1", false)
	if ok, _, _, _ := a.Acquire(ctx, 5*time.Second); !ok {
		t.Fatal("acquire")
	}
	sig := make(chan struct{}, 1)
	w := n.watch("fr", sig, nil, false)
	defer w.Stop(false)
	<-w.Ready()
	if ok, err := n.ForceRelease(ctx, "fr", Force{By: "ops@test"}); !ok || err != nil {
		t.Fatalf("force release: %v %v", ok, err)
	}
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatal("force release did not wake the waiter")
	}
	if ok, _ := n.ForceRelease(ctx, "fr", Force{By: "ops@test"}); ok {
		t.Fatal("force release of a free lock reported removal")
	}
}

// With ContextTimeoutEnabled off, calls are wrapped so a frozen node still
// answers by the caller's deadline.
func TestDeadlineHoldsWithoutContextTimeout(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: 2 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	var inFlight inFlightHook
	c.AddHook(&inFlight)
	n, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if !isGuarded(n) {
		t.Fatal("client without ContextTimeoutEnabled not guarded")
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, _, err = n.Lock("g", "o", "1", false).Acquire(ctx, time.Second)
	took := time.Since(start)
	_ = s.Resume()
	if err == nil {
		t.Fatal("acquire on a frozen node succeeded")
	}
	if took > time.Second {
		t.Fatalf("deadline did not hold: %v", took)
	}
	// The abandoned call ends once the resumed server answers it (at the
	// latest at the client's ReadTimeout): wait for that before the leak
	// check.
	for deadline := time.Now().Add(5 * time.Second); inFlight.n.Load() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d commands still in flight 5 s after the node resumed", inFlight.n.Load())
		}
	}
}

// inFlightHook counts a go-redis client's commands and pipelines under way.
type inFlightHook struct{ n atomic.Int64 }

func (h *inFlightHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.n.Add(1)
		defer h.n.Add(-1)
		return next(ctx, network, addr)
	}
}

func (h *inFlightHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		defer h.n.Add(-1)
		return next(ctx, cmd)
	}
}

func (h *inFlightHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		defer h.n.Add(-1)
		return next(ctx, cmds)
	}
}

func TestParseInfo(t *testing.T) {
	m := ParseInfo("# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n\r\n# Other\r\nuptime_in_seconds:12\r\n")
	if m["redis_version"] != "7.0.15" || m["run_id"] != "abc" || m["uptime_in_seconds"] != "12" {
		t.Fatalf("%v", m)
	}
}

// presetFence makes name's fencing counter exist at fenceSeeded, so grants count
// 1, 2, … from it as an existing counter does.
func presetFence(t *testing.T, n *Node, name string) {
	t.Helper()
	if err := n.Client().Set(t.Context(), n.Keys(name).Fence, fenceSeeded, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// A fencing counter that does not exist starts at the node's clock in
// microseconds, so a counter that expired (or was lost) still hands out
// larger tokens; every use re-arms its retention.
func TestFenceSeed(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	key := n.Keys("seed").Fence
	before := time.Now().UnixMicro()
	l := n.Lock("seed", "alice", "1", true)
	ok, _, fence, err := l.Acquire(ctx, time.Second)
	if !ok || err != nil || fence < before || fence > time.Now().UnixMicro()+1 {
		t.Fatalf("first grant: %v %d %v, want a token from the clock in [%d, now]", ok, fence, err, before)
	}
	if ttl := n.Client().PTTL(ctx, key).Val(); ttl <= DefaultFenceRetention-time.Minute || ttl > DefaultFenceRetention {
		t.Fatalf("counter expires in %v, want the retention %v", ttl, DefaultFenceRetention)
	}
	_, _ = l.Release(ctx)
	// An old counter (an earlier version's, without expiry) counts on and
	// gets the retention at its next use.
	n.Client().Set(ctx, key, fenceSeeded+41, 0)
	bob := n.Lock("seed", "bob", "2", true)
	ok, _, fence, err = bob.Acquire(ctx, time.Second)
	if !ok || err != nil || fence != fenceSeeded+42 || n.Client().PTTL(ctx, key).Val() <= 0 {
		t.Fatalf("grant on an old counter: %v %d %v (pttl %v), want %d and an expiry", ok, fence, err, n.Client().PTTL(ctx, key).Val(), fenceSeeded+42)
	}
	_, _ = bob.Release(ctx)
	// A counter below fenceSeeded was not seeded (the fast path's INCR made
	// it from nothing, or a refused attempt's INCR did): the grant seeds it
	// from the clock, on the fast path and in the script alike.
	for _, expect := range []bool{false, true} {
		n.Client().Set(ctx, key, 5, 0)
		before := time.Now().UnixMicro()
		l := n.Lock("seed", "carol", fmt.Sprint("3", expect), true)
		if expect {
			l.ExpectHeld() // the script at once
		}
		ok, _, fence, err = l.Acquire(ctx, time.Second)
		if !ok || err != nil || fence < before || n.Client().Get(ctx, key).Val() != fmt.Sprint(fence) {
			t.Fatalf("grant on an unseeded counter (script first %v): %v %d %v, want a token from the clock ≥ %d, stored", expect, ok, fence, err, before)
		}
		_, _ = l.Release(ctx)
	}
	if _, err := New(n.Client(), WithFenceRetention(time.Minute)); err == nil || !strings.Contains(err.Error(), "WithFenceRetention") {
		t.Fatalf("a 1-minute retention: %v, want an error naming WithFenceRetention", err)
	}
}

// The fast path's seeding round trip grants nothing by itself: where the
// attempt's share is gone (an Unlock overtook it, or it expired) it answers
// 0 and leaves no lock behind; where the share stands it seeds the counter
// from the clock.
func TestFenceSeedOnlyWhereGranted(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	l := n.Lock("sg", "alice", "alice.1", true)
	seed := func() int64 {
		t.Helper()
		v, err := n.evalInt(ctx, fenceSeedScript, l.keys[:], l.attempt, "", "", n.retentionMS())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	n.Client().Set(ctx, l.keys[1], 1, 0)
	if v := seed(); v != 0 || n.Client().Exists(ctx, l.keys[0]).Val() != 0 {
		t.Fatalf("share gone: seed answered %d, lock key exists %d; want 0 and none", v, n.Client().Exists(ctx, l.keys[0]).Val())
	}
	// The counter INCR made keeps no expiry-less key behind (the fast path
	// re-arms only when due).
	if d := n.Client().PTTL(ctx, l.keys[1]).Val(); d <= DefaultFenceRetention-time.Minute {
		t.Fatalf("share gone: the unseeded counter expires in %v, want the retention %v", d, DefaultFenceRetention)
	}
	n.Client().Set(ctx, l.keys[0], l.val, time.Second)
	before := time.Now().UnixMicro()
	if v := seed(); v < before || n.Client().Get(ctx, l.keys[1]).Val() != fmt.Sprint(v) {
		t.Fatalf("share held: seed answered %d, want a stored token from the clock ≥ %d", v, before)
	}
}
