package quorum

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/multilock"
)

func TestNodeLifeRules(t *testing.T) {
	t0 := time.Now()
	const delay = 10 * time.Second
	type obs struct {
		at     time.Duration // after t0
		runID  string
		uptime time.Duration
		votes  bool
		left   time.Duration // when it does not vote
	}
	cases := []struct {
		name string
		obs  []obs
	}{
		{"old node votes at first sight", []obs{{0, "a", time.Hour, true, 0}}},
		{"young node waits until it has been up delay", []obs{
			{0, "a", 3 * time.Second, false, 7 * time.Second},
			{6 * time.Second, "a", 9 * time.Second, false, time.Second},
			{7 * time.Second, "a", 10 * time.Second, true, 0},
		}},
		{"restart: new run_id sits out delay from when seen", []obs{
			{0, "a", time.Hour, true, 0},
			{time.Second, "b", 0, false, delay},
			{5 * time.Second, "b", 4 * time.Second, false, 6 * time.Second},
			{11 * time.Second, "b", 10 * time.Second, true, 0},
		}},
		{"failover to a long-running replica: new run_id, long uptime", []obs{
			{0, "a", time.Hour, true, 0},
			{time.Second, "r", 2 * time.Hour, false, delay},
			{11 * time.Second, "r", 2 * time.Hour, true, 0},
		}},
		{"uptime seconds are rounded down: never early", []obs{
			{0, "a", 9 * time.Second, false, time.Second},
			{500 * time.Millisecond, "a", 9 * time.Second, false, time.Second},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l nodeLife
			for i, o := range tc.obs {
				err := l.observe(t0.Add(o.at), o.runID, o.uptime, delay)
				if (err == nil) != o.votes {
					t.Fatalf("observation %d %+v: err %v", i, o, err)
				}
				if err != nil && err.Left != o.left {
					t.Fatalf("observation %d %+v: sits out %v more, want %v", i, o, err.Left, o.left)
				}
			}
		})
	}
}

// The scenario restart detection exists for: a lock held on nodes 0, 1 and
// 2 of 5; node 2 is killed (kill -9, no persistence) and restarted at once,
// empty. Nodes 2, 3 and 4 now form a majority that does not know the lock.
// Without restart detection a second client gets the lock while the first
// lease is still valid; with it, node 2 does not vote (the error says why)
// and the second client gets the lock only once the first lease has ended.
func TestRestartDetection(t *testing.T) {
	servers := localredis.StartNT(t, 5, localredis.Config{Persistence: localredis.NoPersistence})
	clients := testutil.Clients(t, servers, nil)
	const ttl = 2 * time.Second
	ctx := t.Context()
	// A generous attempt budget: a slow answer on a busy machine must not
	// pass for a refusal.
	const attempt = time.Second
	// holder and plain go without restart detection (on by default for
	// these nodes without persistence): plain shows the unsafe grant.
	holder := newClient(t, clients, WithTTL(ttl), WithAttemptTimeout(attempt), WithRestartDetection(false))
	detecting := newClient(t, testutil.Clients(t, servers, nil), WithTTL(ttl), WithAttemptTimeout(attempt), WithRestartDetection(true), WithRetryInterval(100*time.Millisecond))
	plain := newClient(t, testutil.Clients(t, servers, nil), WithTTL(ttl), WithAttemptTimeout(attempt), WithRestartDetection(false))

	// The detecting client learns every node's run_id. Fresh servers are
	// young (up less than the TTL): it waits until they have been up that
	// long.
	warm, err := mustMutex(t, detecting, "warm-up").Lock(ctx)
	if err != nil {
		t.Fatalf("warm-up Lock: %v", err)
	}
	_ = warm.Unlock(ctx)
	// Lock returns on a quorum: a node that answered late, or not at all
	// within its share of the attempt (three CI runs at once), may not be
	// known yet. Unknown, the restarted node 2 below would only look young
	// (no previous run_id to name). Make sure all five are known.
	waitRunIDs(t, detecting, len(servers))

	// The holder gets nodes 0, 1 and 2: another owner sits on 3 and 4.
	var blockers []interface {
		Release(context.Context) (bool, error)
	}
	for _, n := range holder.nodes[3:] {
		b := n.Lock("res", "blocker", "blocker-attempt", false)
		if ok, _, _, err := b.Acquire(ctx, ttl); !ok || err != nil {
			t.Fatalf("blocker: %v %v", ok, err)
		}
		blockers = append(blockers, b)
	}
	a, err := mustMutex(t, holder, "res", WithLeaseTime(ttl)).TryLock(ctx)
	if err != nil {
		t.Fatalf("holder TryLock: %v", err)
	}
	// The holder's attempt may have decided on nodes 0-2 while its requests
	// to 3 and 4 were still on their way: released now, a blocker would
	// let such a late request take node 3 for the holder, and the
	// detecting client below would then be refused by 0, 1 and 3 before
	// node 2 answered (seen on a loaded CI run). Wait for those answers.
	waitAnswered(t, a, 3, 4)
	for _, b := range blockers {
		_, _ = b.Release(ctx)
	}

	if err := servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := servers[2].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := holder.nodes[2].Name()
	// Each client's connections to node 2 died with it; the first call on
	// one fails, and the other nodes' refusals decided the attempt before
	// node 2's answer came (2 of 5 CI runs). This test is about what node 2
	// says when it answers: both clients reach it afresh first.
	for _, c := range []*Client{detecting, plain} {
		reconnect(t, c.nodes[2].Client())
	}

	// With restart detection: node 2 does not vote, and says why.
	_, err = mustMutex(t, detecting, "res", WithLeaseTime(ttl)).TryLock(ctx)
	// Node 2's own error: another node may still sit out its first
	// restart delay and report a *restartError too.
	var seen attemptErrs // the per-node errors, as Lock collects them
	seen.add(err)
	var re *restartError
	if ne := seen.best[restarted]; !errors.Is(err, ErrNotObtained) || ne == nil || !errors.As(ne.Err, &re) {
		t.Fatalf("TryLock through the restarted node with restart detection: %v, want ErrNotObtained with a *restartError of %s", err, restarted)
	}
	if re.PrevRunID == "" || re.PrevRunID == re.RunID || re.Left <= 0 {
		t.Fatalf("restart error %+v: want the old and new run_id and the time left", re)
	}
	t.Logf("node %s: %v", restarted, re)

	// Without it: a second holder while the first lease is valid.
	b, err := mustMutex(t, plain, "res", WithLeaseTime(ttl)).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock through the restarted node without restart detection: %v (expected the unsafe grant)", err)
	}
	if time.Now().Before(a.Until()) {
		t.Logf("without restart detection: a second holder while the first lease is valid for %v more (the hazard)", time.Until(a.Until()).Round(time.Millisecond))
	} else {
		t.Logf("without restart detection a second holder got the lock, but the first lease had already ended (slow machine)")
	}
	_ = b.Unlock(ctx)

	// With detection, Lock waits: it gets the lock only after the first
	// lease's validity has ended.
	wctx, cancel := context.WithTimeout(ctx, 3*ttl)
	defer cancel()
	l, err := mustMutex(t, detecting, "res", WithLeaseTime(ttl)).Lock(wctx)
	if err != nil {
		t.Fatalf("Lock with restart detection: %v", err)
	}
	got := time.Now()
	if got.Before(a.Until()) {
		t.Fatalf("a second holder %v before the first lease's validity ended:\n%s", a.Until().Sub(got), l.Report())
	}
	t.Logf("second holder after the first lease ended:\n%s", l.Report())
	_ = l.Unlock(ctx)
	_ = a.Unlock(ctx)
}

// reconnect calls c until a call succeeds (within 5 s), so that dead
// pooled connections are gone and c has a working one.
func reconnect(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(t.Context()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("no working connection to the restarted node in 5 s")
		}
		time.Sleep(10 * time.Millisecond) // poll: the restarted node takes connections once it is ready
	}
}

// waitRunIDs waits (at most 10 s, else fails t) until c's restart
// detection has seen the run_id of each of its n nodes and lets each vote
// (a fresh server sits out until it has been up the restart delay, and
// INFO's uptime is in whole seconds: a node first seen late may sit out a
// while after the others), trying the lock again now and then for a node
// whose answers were lost.
func waitRunIDs(t *testing.T, c *Client, n int) {
	t.Helper()
	rs := c.safety.restart
	known := func() (missing []int) {
		for i := range n {
			rs.mu.Lock()
			l := rs.nodes[restartKey{node: i}]
			unknown := l == nil || l.runID == ""
			rs.mu.Unlock()
			if unknown || rs.pending(i, c.cfg.clock.Now()) != nil {
				missing = append(missing, i)
			}
		}
		return missing
	}
	deadline := time.Now().Add(10 * time.Second)
	for try := 0; ; try++ {
		missing := known()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart detection never saw the run_id of nodes %v, or they never got a vote", missing)
		}
		if try%100 == 99 { // a second without: ask again
			if l, err := mustMutex(t, c, "warm-up").TryLock(t.Context()); err == nil {
				_ = l.Unlock(t.Context())
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A Cluster node counts as persistent when every server it has says
// appendonly yes with appendfsync always: then, by default, its acquires go
// without the restart check (no gate, no INFO). When one server says
// otherwise, the whole Cluster stays under detection, since the lock's keys
// may live on that one.
func TestRestartDetectionClusterPersistence(t *testing.T) {
	cl := localredis.StartClusterT(t, localredis.MinClusterMasters, localredis.Config{})
	client := func() []redis.UniversalClient {
		cc := cl.Client()
		t.Cleanup(func() { _ = cc.Close() })
		return []redis.UniversalClient{cc}
	}
	c := newClient(t, client())
	if got := node.Persistence(c.safety.persist[0].Load()); got != node.Persistent {
		t.Fatalf("a Cluster of fsync-always servers: persistence %v, want Persistent", got)
	}
	if c.gated(0) {
		t.Fatal("a Cluster of fsync-always servers goes through the restart gate by default")
	}
	l, err := mustMutex(t, c, "cluster-persistent").TryLock(t.Context())
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	_ = l.Unlock(t.Context())

	// One master of three on everysec: the Cluster is not persistent.
	last := cl.Masters[len(cl.Masters)-1].Client()
	t.Cleanup(func() { _ = last.Close() })
	if err := last.ConfigSet(t.Context(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	c2 := newClient(t, client())
	if got := node.Persistence(c2.safety.persist[0].Load()); got != node.NotPersistent {
		t.Fatalf("a Cluster with one everysec master: persistence %v, want NotPersistent", got)
	}
	if !c2.gated(0) || !c2.detects(0) {
		t.Fatal("a Cluster with one everysec master is not under restart detection")
	}
	// WithRestartDetection(false) still turns it off.
	c3 := newClient(t, client(), WithRestartDetection(false))
	if c3.gated(0) {
		t.Fatal("WithRestartDetection(false): the Cluster still goes through the gate")
	}
}

// A node known to sit out is not asked again, so the error that says so is
// made from its last answer: its uptime still moves on with the countdown
// (the two add up to the delay for a young node), and the summary counts
// it as sitting out, not as failed.
func TestSittingOutReportsTrueUptime(t *testing.T) {
	t0 := time.Now()
	s := newRestartState(10*time.Second, 0)
	if err := s.observe(0, "", t0, "run-a", 2*time.Second); err == nil {
		t.Fatal("a node up 2 s voted under a 10 s delay")
	}
	var last time.Duration
	for _, after := range []time.Duration{time.Second, 3 * time.Second} {
		err := s.pending(0, t0.Add(after))
		var re *restartError
		if !errors.As(err, &re) {
			t.Fatalf("after %v: %v, want a restartError", after, err)
		}
		if want := 2*time.Second + after; re.Uptime != want || re.Uptime+re.Left != 10*time.Second {
			t.Errorf("after %v: up %v, left %v; want up %v, the two adding up to the delay", after, re.Uptime, re.Left, want)
		}
		if re.Uptime <= last {
			t.Errorf("uptime did not move on: %v after %v", re.Uptime, last)
		}
		last = re.Uptime
		if !multilock.SitsOut(err) || !errors.Is(err, ErrNodeRestarted) {
			t.Errorf("%v: not reported as sitting out", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "up only "+re.Uptime.String()) {
			t.Errorf("%q does not say the uptime %v", msg, re.Uptime)
		}
	}
}
