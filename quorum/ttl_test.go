package quorum_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// WithTTL gives one lock its own TTL; the watchdog keeps it.
func TestWithTTL(t *testing.T) {
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	c := dialT(t, strings.Join(addrs, ","), quorum.WithTTL(10*time.Second))
	ctx := t.Context()
	short, err := c.Mutex("ttl/short", quorum.WithTTL(900*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	l, err := short.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	plain, _ := c.Mutex("ttl/plain")
	pl, err := plain.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Unlock(context.Background())

	if in, _ := c.Admin().Inspect(ctx, "ttl/short"); in.TTL <= 0 || in.TTL > 900*time.Millisecond {
		t.Fatalf("short lock's TTL %v, want at most 900ms", in.TTL)
	}
	if in, _ := c.Admin().Inspect(ctx, "ttl/plain"); in.TTL < 5*time.Second {
		t.Fatalf("plain lock's TTL %v, want the client's 10s", in.TTL)
	}
	// Three TTLs later the watchdog has kept it.
	time.Sleep(2700 * time.Millisecond)
	if err := l.Err(); err != nil {
		t.Fatalf("lease ended: %v", err)
	}
	if in, _ := c.Admin().Inspect(ctx, "ttl/short"); in.Verdict != admin.HeldByQuorum || in.TTL > 900*time.Millisecond {
		t.Fatalf("after 3 TTLs: %s, TTL %v", in.Verdict, in.TTL)
	}
	if _, err := c.Mutex("ttl/bad", quorum.WithTTL(-time.Second)); err == nil {
		t.Fatal("a negative lock TTL was accepted")
	}
}
