package chaos

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("chaos.seed", 0, "nemesis seed for the soak test (0: from the clock; the seed used is logged)")

// runNemesisOn runs a nemesis over faults for d against c while a small
// workload writes to every master, then checks that the cluster is whole
// again: every node answers through its proxy, no toxic is left, no proxy
// is disabled, no process is paused or down.
func runNemesisOn(t *testing.T, c *Cluster, faults []Fault, seed uint64, d time.Duration, hold, rest Range) *Recorder {
	t.Helper()
	rec := NewRecorder()
	n := &Nemesis{Seed: seed, Faults: faults, Hold: hold, Rest: rest, Recorder: rec}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()

	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for _, m := range c.Masters {
		cl := client(t, m.Options())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				octx, ocancel := context.WithTimeout(ctx, 200*time.Millisecond)
				err := cl.Set(octx, "k", i, time.Second).Err()
				ocancel()
				if err != nil {
					failed.Add(1)
					sleep(ctx, 10*time.Millisecond)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	if err := n.Run(ctx); err != nil {
		t.Errorf("nemesis: %v", err)
	}
	wg.Wait()
	for _, e := range rec.Events() {
		t.Log(e)
	}
	t.Logf("seed %d: %d windows, workload %d ok / %d failed", seed, len(rec.Windows()), ok.Load(), failed.Load())
	if ok.Load() == 0 {
		t.Error("the workload never succeeded")
	}
	checkWhole(t, c)
	return rec
}

func checkWhole(t *testing.T, c *Cluster) {
	t.Helper()
	ctx := bounded(t, 30*time.Second)
	for _, n := range c.Nodes() {
		for _, p := range []*Proxy{n.Proxy(), n.PeerProxy()} {
			if p == nil {
				continue
			}
			if names, _ := p.Toxics(); len(names) > 0 || !p.Enabled() {
				t.Errorf("proxy %s left with toxics %v, enabled=%v", p.Name(), names, p.Enabled())
			}
		}
		if s := n.Server(); s != nil && (s.Paused() || !s.Running()) {
			t.Errorf("node %s left paused=%v running=%v", n.Name(), s.Paused(), s.Running())
		}
		cl := client(t, n.Options())
		eventually(t, 10*time.Second, "node "+n.Name()+" answers through its proxy", func() bool {
			return cl.Ping(ctx).Err() == nil
		})
	}
	for _, g := range c.Groups {
		if err := g.WaitReplicated(ctx); err != nil {
			t.Errorf("group %s: %v", g.Name(), err)
		}
	}
}

// A short nemesis over every node fault on real servers: faults compose, and
// the cluster is whole when it stops.
func TestNemesisOnRealCluster(t *testing.T) {
	c := StartT(t, Topology{Masters: 3, Persistence: 0})
	var faults []Fault
	for _, m := range c.Masters {
		for _, f := range NodeFaults(m) {
			if _, isClock := f.(*ClockSkew); isClock {
				continue // restarts are covered by Crash; keep this test short
			}
			faults = append(faults, f)
		}
	}
	runNemesisOn(t, c, faults, 1, 4*time.Second,
		Range{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond},
		Range{Min: 50 * time.Millisecond, Max: 150 * time.Millisecond})
}

// TestSoak runs a long random nemesis over everything: masters, a group with
// sentinels, clock faults. Enable with -chaos.soak=10m (and -chaos.seed to
// replay a run).
func TestSoak(t *testing.T) {
	if *soak <= 0 {
		t.Skip("soak test: enable with -chaos.soak=<duration>")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("nemesis seed %d (replay with -chaos.seed=%d)", seed, seed)
	c := StartT(t, Topology{Masters: 5, Groups: 1, Sentinels: 3})
	var faults []Fault
	for _, m := range c.Masters {
		faults = append(faults, NodeFaults(m)...)
		faults = append(faults, &EmulatedClockSkew{Node: m, Rate: 2}, &Bandwidth{Proxy: m.Proxy(), KBps: 4})
	}
	g := c.Groups[0]
	faults = append(faults, &CutLink{Group: g}, &SentinelFailover{Group: g})
	rec := runNemesisOn(t, c, faults, seed, *soak,
		Range{Min: time.Second, Max: 8 * time.Second},
		Range{Min: 500 * time.Millisecond, Max: 3 * time.Second})
	for _, w := range rec.Windows() {
		if w.Err != nil {
			t.Log(fmt.Sprintf("window %d %s: %v", w.Step, w.Fault, w.Err))
		}
	}
}
