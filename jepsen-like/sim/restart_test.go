package sim

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
)

// A simulated node reports a run id and uptime in INFO server, both new
// after a crash-restart, and its persistence in CONFIG GET.
func TestNodeInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNet(1)
		nd := NewNode(nw, "n0")
		defer nd.Close()
		cl := redis.NewClient(ClientOptions(nw, "w0", "n0"))
		defer cl.Close()
		info := func() (string, string) {
			s, err := cl.Info(t.Context(), "server").Result()
			if err != nil {
				t.Fatal(err)
			}
			var id, up string
			for _, l := range strings.Split(s, "\r\n") {
				if v, ok := strings.CutPrefix(l, "run_id:"); ok {
					id = v
				}
				if v, ok := strings.CutPrefix(l, "uptime_in_seconds:"); ok {
					up = v
				}
			}
			return id, up
		}
		time.Sleep(3 * time.Second)
		id1, up1 := info()
		if len(id1) != 40 || up1 != "3" {
			t.Fatalf("run_id %q uptime %q", id1, up1)
		}
		nd.Crash(false)
		nd.Restart()
		_ = cl.Ping(t.Context()).Err() // the crash broke the pooled connection
		id2, up2 := info()
		if id2 == id1 || len(id2) != 40 || up2 != "0" {
			t.Fatalf("after a restart: run_id %q (was %q) uptime %q", id2, id1, up2)
		}
		cfg, err := cl.ConfigGet(t.Context(), "append*").Result()
		if err != nil || cfg["appendonly"] != "no" || len(cfg) != 2 {
			t.Fatalf("CONFIG GET append*: %v %v", cfg, err)
		}
		nd.SetPersistence(true)
		cfg, err = cl.ConfigGet(t.Context(), "appendfsync").Result()
		if err != nil || cfg["appendfsync"] != "always" || len(cfg) != 1 {
			t.Fatalf("CONFIG GET appendfsync: %v %v", cfg, err)
		}
	})
}

// Restart detection with its default delay runs in the simulation: the
// crash-restart cell that loses a majority's keys without persistence
// stays clean (lease exclusion, the RedLock invariant) and keeps
// acquiring once the restarted nodes vote again; without it the same
// cell shows the violation.
func TestRestartDetection(t *testing.T) {
	plain, m := mode(t, "redlock-3"), mode(t, "redlock-3+restart")
	if m.RestartDetection != catalog.RestartAlways || plain.RestartDetection != catalog.RestartOff {
		t.Fatalf("redlock-3 %v, redlock-3+restart %v", plain.RestartDetection, m.RestartDetection)
	}
	reproduced := 0
	for seed := uint64(1); seed <= 3; seed++ {
		c := CellRun{Mode: plain, Scenario: "crash-restart-nopersist", Seed: seed, Timing: Timing{Duration: 6 * time.Second}}
		if v := Run(t, c); v.Reproduced() {
			reproduced++
		}
		c.Mode = m
		v := Run(t, c)
		t.Log(v)
		if v.Bug() || !v.Result.ExpectedSafe || v.Report.LeaseExclusion.Count > 0 || v.Invariant.Violations > 0 {
			t.Errorf("with restart detection: %v (invariant %+v)", v, v.Invariant)
		}
		if v.Report.Acquires.Ok == 0 {
			t.Errorf("with restart detection nothing was acquired: %v", v)
		}
	}
	if reproduced == 0 {
		t.Error("without restart detection no seed showed the violation: the cells test nothing")
	}
}
