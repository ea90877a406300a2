package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// A quorum of three clusters takes and releases a lock: the lock's keys
// sit on one master of each cluster, the one serving their slot; a second
// client cannot take it meanwhile, not even when one cluster lost the key
// (a failover to a replica without it), and can after the release; Stop
// leaves no process and no data directory behind.
func TestQuorumOfClustersLocksAndCleansUp(t *testing.T) {
	if _, err := localredis.FindCLI(); err != nil && !localredis.Required() {
		t.Skip(err)
	}
	ctx := t.Context()
	qc, err := startQuorumOfClusters(ctx, scaleNodes, scaleMasters)
	if err != nil {
		if errors.Is(err, localredis.ErrNotInstalled) && !localredis.Required() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(qc.Stop)
	servers := qc.Servers()
	if len(servers) != scaleNodes*scaleMasters {
		t.Fatalf("%d servers, want %d", len(servers), scaleNodes*scaleMasters)
	}
	// The nodes are seconds old: restart detection would keep them from
	// voting for a TTL; this test is about the topology.
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
		closers = nil
	}
	t.Cleanup(closeAll)
	newClient := func() *quorum.Client {
		t.Helper()
		cls := qc.Clients()
		for _, c := range cls {
			closers = append(closers, c.Close)
		}
		c, err := quorum.New(cls, quorum.WithRestartDetection(false))
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, c.Close)
		return c
	}
	a, b := newClient(), newClient()
	const name = "orders/42"
	ma, err := a.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := ma.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on a quorum of clusters: %v", err)
	}
	if lease.Token() <= 0 {
		t.Errorf("fencing token %d, want > 0", lease.Token())
	}
	if _, err := mb.TryLock(ctx); !errors.Is(err, quorum.ErrNotObtained) {
		t.Fatalf("second client's TryLock while held: %v, want ErrNotObtained", err)
	}
	for i, c := range qc.Clusters {
		holders := map[int][]string{}
		for j, s := range c.Masters {
			rc := s.Client()
			keys, err := rc.Keys(ctx, "*{"+name+"}*").Result()
			_ = rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) > 0 {
				holders[j] = keys
			}
		}
		if len(holders) != 1 {
			t.Fatalf("cluster %d: the lock's keys are on masters %v, want one master (hash tag)", i, holders)
		}
		for j, keys := range holders {
			slot, err := c.Slot(ctx, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			owner, err := c.SlotOwner(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			if owner != j {
				t.Errorf("cluster %d: keys %v on master %d, slot %d served by %d", i, keys, j, slot, owner)
			}
		}
	}
	// A failover inside one cluster whose promoted replica lacks the key:
	// the lock's key is gone from that cluster, which may now vote for a
	// contender. One vote of three is not a majority: the contender is
	// refused, and the holder extends on the other two clusters.
	lost := qc.Clusters[0]
	for _, s := range lost.Masters {
		rc := s.Client()
		keys, err := rc.Keys(ctx, "*{"+name+"}*").Result()
		for _, k := range keys {
			if strings.HasSuffix(k, "{"+name+"}") { // the lock itself, not its fence or channel
				err = errors.Join(err, rc.Del(ctx, k).Err())
			}
		}
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mb.TryLock(ctx); !errors.Is(err, quorum.ErrNotObtained) {
		t.Fatalf("contender's TryLock after one cluster lost the key: %v, want ErrNotObtained", err)
	}
	if err := lease.Extend(ctx); err != nil {
		t.Fatalf("holder's Extend after one cluster lost the key: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	lb, err := mb.TryLock(ctx)
	if err != nil {
		t.Fatalf("second client's TryLock after the release: %v", err)
	}
	if lb.Token() <= lease.Token() {
		t.Errorf("token after the hand-over %d, not above %d", lb.Token(), lease.Token())
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	localredis.CheckExpiry(t, servers...)
	// Clients first: a cluster client left open keeps asking for the slot
	// map of servers that are gone.
	closeAll()

	pids, dirs := make([]int, len(servers)), make([]string, len(servers))
	for i, s := range servers {
		pids[i], dirs[i] = s.PID(), s.Dir()
	}
	qc.Stop()
	for i, s := range servers {
		if s.Running() {
			t.Errorf("server %s still running after Stop", s.Addr())
		}
		if err := syscall.Kill(pids[i], 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d of %s still exists after Stop (kill 0: %v)", pids[i], s.Addr(), err)
		}
		if _, err := os.Stat(dirs[i]); !os.IsNotExist(err) {
			t.Errorf("data directory %s left after Stop (%v)", dirs[i], err)
		}
	}
}

// A start that fails part-way (its deadline ends while servers are
// starting) leaves no redis-server behind.
func TestQuorumOfClustersFailedStartCleansUp(t *testing.T) {
	if _, err := localredis.FindCLI(); err != nil && !localredis.Required() {
		t.Skip(err)
	}
	before := childServers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	qc, err := startQuorumOfClusters(ctx, scaleNodes, scaleMasters)
	if err == nil {
		qc.Stop()
		t.Skip("the clusters started within 50 ms: nothing failed to clean up")
	}
	if after := childServers(t); after > before {
		t.Fatalf("%d redis-server children after the failed start, %d before (%v)", after, before, err)
	}
}

// childServers counts this process's redis-server children.
func childServers(t *testing.T) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	n := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) > 1 && f[1] == me && strings.HasPrefix(s[open+1:close], "redis-server") {
			n++
		}
	}
	return n
}

// The scaling case measures all four rows: acquisitions, and server CPU
// from INFO (not zero), in the table and the JSON.
func TestScalingCaseRows(t *testing.T) {
	if _, err := localredis.FindCLI(); err != nil && !localredis.Required() {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "out.json")
	var out, log bytes.Buffer
	if err := run([]string{"-cases", "^scaling$", "-rounds", "1", "-dur", "50ms", "-json", path}, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Results []CaseRow
		Targets []Check
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range f.Results {
		if r.Case != scalingCaseID {
			t.Errorf("unexpected case %q", r.Case)
			continue
		}
		seen[r.Variant] = true
		if r.Ops < 1 || r.ServersCPUusPerOp <= 0 {
			t.Errorf("%s: %d ops, %.1f server CPU µs/op", r.Variant, r.Ops, r.ServersCPUusPerOp)
		}
	}
	for _, v := range []string{scaleStandalone, scaleClusters, scaleClustersRD, scaleClustersFull} {
		if !seen[v] {
			t.Errorf("no row %q", v)
		}
		if !strings.Contains(out.String(), "| quorumlock "+v+" |") {
			t.Errorf("table lacks row %q:\n%s", v, out.String())
		}
	}
	n := 0
	for _, c := range f.Targets {
		if strings.HasPrefix(c.Target, "scaling:") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d scaling targets, want 1: %+v", n, f.Targets)
	}
	if !strings.Contains(out.String(), "acq/s per server core") {
		t.Errorf("no per-core rate in the table:\n%s", out.String())
	}
}
