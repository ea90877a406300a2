package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/localredis"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m,
		// toxiproxy v2.12.0 leaves a noop toxic blocked on a send when a
		// link is torn down mid-stream (see jepsen-like/matrix tests).
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"))
}

// Every scenario has an expectation for every peer, and peer ids do not
// clash with quorumlock's modes.
func TestPeerModes(t *testing.T) {
	for _, p := range Peers {
		if _, clash := matrix.FindMode(matrix.Modes, p.ID); clash {
			t.Errorf("peer %s has the id of a quorumlock mode", p.ID)
		}
		for _, s := range matrix.Scenarios {
			if s.Applies == nil || s.Applies(p) {
				if e := s.Expect(p); e.Why == "" {
					t.Errorf("%s × %s: no expectation", p.ID, s.ID)
				}
			}
		}
	}
}

// A peer through the whole pipeline: redislock under a client pause
// accepts the paused holder's stale write (it has no fencing tokens).
func TestPeerCell(t *testing.T) {
	needRedis(t)
	m, _ := matrix.FindMode(Peers, "redislock")
	s, _ := matrix.FindScenario(matrix.Scenarios, "client-pause")
	timing := matrix.Quick
	timing.Duration = 2500 * time.Millisecond
	r, _, err := matrix.RunCell(t.Context(), matrix.Cell{Mode: m, Scenario: s}, timing, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Acquisitions == 0 || r.StaleAccepted == 0 || r.Verdict != report.Reproduced {
		t.Errorf("redislock × client-pause: %d acquisitions, %d stale accepted, %s; want > 0, > 0, reproduced",
			r.Acquisitions, r.StaleAccepted, r.Verdict)
	}
}

// rueidislock sets its expiry with PXAT from the client's wall clock: with
// the node's clock ahead by three quarters of the lease its keys expire
// early and two leases are valid at once. quorumlock's single mode sends
// the TTL relative (PX) and stays safe on the same cluster setting.
func TestClockOffset(t *testing.T) {
	needRedis(t)
	if err := chaos.ClockSupported(); err != nil {
		if localredis.Required() {
			t.Fatal(err)
		}
		t.Skipf("real clock faults unavailable here: %v", err)
	}
	rueidislockAgainstOurs(t, "clock-offset", matrix.Quick, "overlapping valid leases",
		func(r report.Row) int { return r.ValidOverlaps })
}

// rueidislock's renewal, hung by a partition that holds packets, runs to
// its deadline a whole validity after it started, so the holder is told of
// the loss after another worker took the lock over. quorumlock's watchdog
// ends the lease first.
func TestRenewalHang(t *testing.T) {
	needRedis(t)
	timing := matrix.Quick
	// Paced ×10: 20 s with a 0.8 s lease, so the late signal (half a
	// validity, 400 ms) is well past the checker's 200 ms grace.
	timing.Duration, timing.Lease = 2*time.Second, 800*time.Millisecond
	rueidislockAgainstOurs(t, "renewal-hang", timing, "leases taken over untold",
		func(r report.Row) int { return r.MissedSignals })
}

// rueidislockAgainstOurs runs scenario for rueidislock, which must show
// violations (count > 0), and for quorumlock's single mode, which must not;
// both verdicts must be "reproduced" (what the cell expects).
func rueidislockAgainstOurs(t *testing.T, scenario string, timing matrix.RunTiming, what string, count func(report.Row) int) {
	t.Helper()
	s, _ := matrix.FindScenario(matrix.Scenarios, scenario)
	peerMode, _ := matrix.FindMode(Peers, "rueidislock")
	ours, _ := matrix.FindMode(matrix.Modes, "single")
	for _, tc := range []struct {
		m      matrix.Mode
		unsafe bool
	}{{peerMode, true}, {ours, false}} {
		r, _, err := matrix.RunCell(t.Context(), matrix.Cell{Mode: tc.m, Scenario: s}, timing, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := count(r); r.Acquisitions == 0 || r.Verdict != report.Reproduced || (n > 0) != tc.unsafe {
			t.Errorf("%s × %s: %d acquisitions, %d %s, %s (%s); want > 0 acquisitions, %s %v, reproduced",
				tc.m.ID, scenario, r.Acquisitions, n, what, r.Verdict, r.VerdictNote, what, tc.unsafe)
		}
	}
}

// needRedis skips (or, when Redis is required, fails) without redis-server.
func needRedis(t *testing.T) {
	t.Helper()
	if _, err := localredis.Find(); err != nil {
		if localredis.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}
