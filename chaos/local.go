package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/localredis"
)

// TB is the part of testing.TB that StartT uses.
type TB interface {
	localredis.TB
	Logf(format string, args ...any)
}

// StartT starts a topology for a test and closes it in t.Cleanup. Without
// redis-server (or redis-sentinel when sentinels are asked for) the test is
// skipped, or failed when localredis.Required() (CI).
func StartT(t TB, topo Topology) *Cluster {
	t.Helper()
	if topo.Backend == Local {
		if _, err := localredis.Find(); err != nil {
			skipOrFail(t, "%v", err)
		}
		if topo.Sentinels > 0 {
			if _, err := localredis.FindSentinel(); err != nil {
				skipOrFail(t, "%v", err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, topo)
	if err != nil {
		t.Fatalf("chaos: start %+v: %v", topo, err)
	}
	t.Cleanup(func() {
		// The invariant every test checks: no lock key left without expiry
		// (nodes the test left paused or down are skipped: they time out).
		if keys, _ := c.KeysWithoutExpiry(context.Background(), 2*time.Second); len(keys) > 0 {
			t.Errorf("chaos: lock keys without expiry (a lock that never frees itself): %q", keys)
		}
		if err := c.Close(); err != nil {
			t.Logf("chaos: close cluster: %v", err)
		}
	})
	return c
}

func skipOrFail(t TB, format string, args ...any) {
	t.Helper()
	if localredis.Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// ErrNoSentinel says redis-sentinel could not be found.
var ErrNoSentinel = localredis.ErrNoSentinel

// Start starts a topology and returns once every node answers, replicas are
// in sync and sentinels know each other and the replicas. The context bounds
// the start, not the cluster's life: call Close.
func Start(ctx context.Context, topo Topology) (*Cluster, error) {
	if err := topo.validate(); err != nil {
		return nil, err
	}
	switch topo.Backend {
	case Local:
		return startLocal(ctx, topo)
	case Docker:
		return startDocker(ctx, topo)
	}
	return nil, fmt.Errorf("chaos: unknown backend %v", topo.Backend)
}

func newCluster(backend string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "quorumlock-chaos-*")
	if err != nil {
		return nil, err
	}
	tp, err := StartToxiproxy()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{backend: backend, tp: tp, apiURL: tp.URL(), dir: dir}
	c.onClose(tp.Close)
	return c, nil
}

func startLocal(ctx context.Context, topo Topology) (_ *Cluster, err error) {
	c, err := newCluster("local")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	pers := topo.Persistence
	if pers == localredis.DefaultPersistence {
		pers = localredis.NoPersistence // Topology's zero value is none
	}
	base := localredis.Config{Persistence: pers, Extra: topo.Extra}

	// Independent masters: start the servers in parallel, then put a proxy
	// in front of each.
	if topo.Masters > 0 {
		servers, err := localredis.StartN(ctx, topo.Masters, base)
		if err != nil {
			return nil, err
		}
		for _, s := range servers {
			c.onClose(s.Stop)
		}
		for i, s := range servers {
			name := "m" + strconv.Itoa(i)
			px, err := c.tp.NewProxy(name, s.Addr())
			if err != nil {
				return nil, err
			}
			n := &Node{name: name, proxy: px, direct: s.Addr(), server: s, proc: localProcess{s}, c: c}
			c.onClose(n.closeAdmin)
			c.Masters = append(c.Masters, n)
		}
	}

	for gi := 0; gi < topo.Groups; gi++ {
		g, err := startLocalGroup(ctx, c, topo, gi, base)
		if err != nil {
			return nil, err
		}
		c.Groups = append(c.Groups, g)
	}
	for _, g := range c.Groups {
		if err := g.WaitReplicated(ctx); err != nil {
			return nil, err
		}
	}
	if topo.Sentinels > 0 {
		var wg sync.WaitGroup
		errs := make([]error, len(c.Groups))
		for i, g := range c.Groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = startLocalSentinels(ctx, c, topo, g)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startLocalGroup starts one master+replica group. Each node's port is chosen
// first so that both of its proxies exist before the server starts: the
// replica's replicaof and every node's replica-announce-port name the peer
// proxies, so replication and sentinel discovery go through them (sentinel
// would otherwise "fix" a replica that replicates from an address it does
// not know as the master's).
func startLocalGroup(ctx context.Context, c *Cluster, topo Topology, gi int, base localredis.Config) (*Group, error) {
	g := &Group{name: "g" + strconv.Itoa(gi), c: c}
	for j := 0; j <= topo.replicas(); j++ {
		name := g.name + "n" + strconv.Itoa(j)
		port, err := localredis.FreePort()
		if err != nil {
			return nil, err
		}
		upstream := "127.0.0.1:" + strconv.Itoa(port)
		px, err := c.tp.NewProxy(name, upstream)
		if err != nil {
			return nil, err
		}
		peer, err := c.tp.NewProxy(name+"-peer", upstream)
		if err != nil {
			return nil, err
		}
		n := &Node{name: name, proxy: px, peer: peer, peerAddr: peer.Addr(), group: g, c: c}
		c.onClose(n.closeAdmin)
		g.nodes = append(g.nodes, n)
	}
	g.master = g.nodes[0]
	errs := make([]error, len(g.nodes))
	var wg sync.WaitGroup
	for j, n := range g.nodes {
		cfg := base
		cfg.Extra = append(append([]string(nil), base.Extra...),
			"replica-announce-ip 127.0.0.1",
			"replica-announce-port "+portOf(n.peerAddr))
		if j > 0 {
			cfg.ReplicaOf = g.nodes[0].peerAddr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = startLocalNode(ctx, c, n, cfg)
		}()
	}
	wg.Wait()
	return g, errors.Join(errs...)
}

// startLocalNode starts n's server on the port its proxies point at; if that
// port was taken meanwhile, it picks another and re-points the proxies.
func startLocalNode(ctx context.Context, c *Cluster, n *Node, cfg localredis.Config) error {
	var err error
	for try := 0; try < 5; try++ {
		cfg.Port, _ = strconv.Atoi(portOf(n.proxy.Upstream()))
		var s *localredis.Server
		if s, err = localredis.Start(ctx, cfg); err == nil {
			n.server, n.proc = s, localProcess{s}
			n.setDirect(s.Addr())
			c.onClose(s.Stop)
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		port, perr := localredis.FreePort()
		if perr != nil {
			return perr
		}
		upstream := "127.0.0.1:" + strconv.Itoa(port)
		if perr := errors.Join(n.proxy.SetUpstream(ctx, upstream), n.peer.SetUpstream(ctx, upstream)); perr != nil {
			return perr
		}
	}
	return fmt.Errorf("chaos: start node %s: %w", n.name, err)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// startLocalSentinels starts topo.Sentinels redis-sentinel processes watching
// g through its master's peer proxy, and waits until each one knows the
// replicas and the other sentinels (so a failover can happen at once).
func startLocalSentinels(ctx context.Context, c *Cluster, topo Topology, g *Group) error {
	bin, err := localredis.FindSentinel()
	if err != nil {
		return err
	}
	downAfter := topo.SentinelDownAfter
	if downAfter <= 0 {
		downAfter = 500 * time.Millisecond
	}
	failoverTimeout := topo.SentinelFailoverTimeout
	if failoverTimeout <= 0 {
		failoverTimeout = 3 * time.Second
	}
	g.quorum = topo.Sentinels/2 + 1
	m := g.Master()
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s %d\n"+
		"sentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s %d\n"+
		"sentinel parallel-syncs %s 1\n",
		g.name, portOf(m.peerAddr), g.quorum,
		g.name, downAfter.Milliseconds(),
		g.name, failoverTimeout.Milliseconds(),
		g.name)
	servers := make([]*localredis.Server, topo.Sentinels)
	errs := make([]error, topo.Sentinels)
	var wg sync.WaitGroup
	for i := range servers {
		dir := filepath.Join(c.dir, fmt.Sprintf("%ss%d", g.name, i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		file := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = localredis.Start(ctx, localredis.Config{Bin: bin, ConfigFile: file, Dir: dir})
		}()
	}
	wg.Wait()
	for _, s := range servers {
		if s != nil {
			c.onClose(s.Stop)
			g.sentinels = append(g.sentinels, s.Addr())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chaos: start sentinels of %s: %w", g.name, err)
	}
	return g.waitSentinelsReady(ctx, len(g.nodes)-1)
}
