package quorum_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

type nopObserver struct{}

func (nopObserver) Observe(context.Context, observe.Event) {}

// One Option type serves the client and one lock; an option given where it
// cannot apply is refused with one line that names it, at every
// constructor, and WithTTL is taken at both levels.
func TestOptionLevels(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	c := dialAddrs(t, []string{s.Addr()})

	clientOnly := map[string]quorum.Option{
		"WithKeyPrefix":        quorum.WithKeyPrefix("x:"),
		"WithBatching":         quorum.WithBatching(false),
		"WithPolicy":           quorum.WithPolicy(quorum.All),
		"WithDriftFactor":      quorum.WithDriftFactor(0.02),
		"WithAttemptTimeout":   quorum.WithAttemptTimeout(time.Second),
		"WithReleaseTimeout":   quorum.WithReleaseTimeout(time.Second),
		"WithRetryInterval":    quorum.WithRetryInterval(time.Second),
		"WithFencing":          quorum.WithFencing(false),
		"WithFenceRetention":   quorum.WithFenceRetention(48 * time.Hour),
		"WithDialCheck":        quorum.WithDialCheck(time.Second),
		"WithFunctions":        quorum.WithFunctions(true),
		"WithLabel":            quorum.WithLabel("x"),
		"WithObserver":         quorum.WithObserver(nopObserver{}),
		"WithLogger":           quorum.WithLogger(slog.Default()),
		"WithReplicaAck":       quorum.WithReplicaAck(1, time.Millisecond),
		"WithRestartDetection": quorum.WithRestartDetection(false),
		"WithRestartDelay":     quorum.WithRestartDelay(time.Second),
		"WithPreflight":        quorum.WithPreflight(admin.Problem),
	}
	constructors := map[string]func(quorum.Option) error{
		"Mutex":    func(o quorum.Option) error { _, err := c.Mutex("lvl", o); return err },
		"MutexAll": func(o quorum.Option) error { _, err := c.MutexAll([]string{"lvl/a", "lvl/b"}, o); return err },
		"RWMutex":  func(o quorum.Option) error { _, err := c.RWMutex("lvl", o); return err },
		"FairMutex": func(o quorum.Option) error {
			_, err := c.FairMutex("lvl", o)
			return err
		},
		"Election": func(o quorum.Option) error { _, err := c.Election("lvl", o); return err },
	}
	for name, o := range clientOnly {
		for kind, build := range constructors {
			err := build(o)
			want := "quorumlock: " + name + " applies to the client, not to one lock"
			if err == nil || err.Error() != want {
				t.Errorf("%s given to %s: %v, want %q", name, kind, err, want)
			}
		}
	}

	lockOnly := map[string]quorum.Option{
		"WithOwner":     quorum.WithOwner("worker-1"),
		"WithLeaseTime": quorum.WithLeaseTime(time.Second),
	}
	for name, o := range lockOnly {
		want := "quorumlock: " + name + " applies to one lock, not to the client"
		if qc, err := quorum.Dial(s.Addr(), o); err == nil || err.Error() != want {
			if qc != nil {
				qc.Close()
			}
			t.Errorf("Dial with %s: %v, want %q", name, err, want)
		}
		rc := redis.NewClient(&redis.Options{Addr: s.Addr()})
		qc, err := quorum.New([]redis.UniversalClient{rc}, o)
		if err == nil || err.Error() != want {
			if qc != nil {
				qc.Close()
			}
			t.Errorf("New with %s: %v, want %q", name, err, want)
		}
		rc.Close()
		// Where a lock option applies it is taken.
		if _, err := c.Mutex("lvl", o); err != nil {
			t.Errorf("Mutex with %s: %v", name, err)
		}
		// An election is its own owner and is renewed until it resigns.
		err = func() error { _, err := c.Election("lvl", o); return err }()
		if err == nil || !strings.Contains(err.Error(), name+" does not apply to an election") {
			t.Errorf("Election with %s: %v", name, err)
		}
		testutil.CheckOneLine(t, err)
	}

	// WithTTL applies at both levels: the client's default, one lock's own.
	qc := dialAddrs(t, []string{s.Addr()}, quorum.WithTTL(3*time.Second))
	for kind, build := range constructors {
		if err := build(quorum.WithTTL(2 * time.Second)); err != nil {
			t.Errorf("%s with WithTTL: %v", kind, err)
		}
	}
	m, err := qc.Mutex("lvl/ttl", quorum.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(t.Context())
	// The lock's TTL, not the client's 3s, is what the nodes were given.
	if left := time.Until(lease.Until()); left > 2*time.Second {
		t.Errorf("a lock with WithTTL(2s) on a client with WithTTL(3s) is valid for %v", left)
	}
}
