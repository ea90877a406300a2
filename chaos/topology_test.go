package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

func TestMastersBehindProxies(t *testing.T) {
	for _, n := range []int{1, 3, 5, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := StartT(t, Topology{Masters: n})
			ctx := bounded(t, 10*time.Second)
			if got := len(c.Addrs()); got != n {
				t.Fatalf("%d addresses, want %d", got, n)
			}
			seen := map[string]bool{}
			for i, m := range c.Masters {
				if m.Name() != fmt.Sprintf("m%d", i) {
					t.Errorf("node %d named %q", i, m.Name())
				}
				if m.Addr() == m.DirectAddr() {
					t.Fatalf("%s: client address %s is the server itself, not a proxy", m.Name(), m.Addr())
				}
				if m.Proxy().Upstream() != m.DirectAddr() {
					t.Fatalf("%s: proxy upstream %s, server %s", m.Name(), m.Proxy().Upstream(), m.DirectAddr())
				}
				// A write through the proxy is visible on the server itself,
				// and the masters are distinct servers.
				key := "k-" + m.Name()
				cl := client(t, m.Options())
				if err := cl.Set(ctx, key, "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if v, err := m.Admin().Get(ctx, key).Result(); err != nil || v != "v" {
					t.Fatalf("%s: direct GET = %q, %v", m.Name(), v, err)
				}
				cfg, err := m.Admin().ConfigGet(ctx, "port").Result()
				if err != nil {
					t.Fatal(err)
				}
				if seen[cfg["port"]] {
					t.Fatalf("two masters on port %s", cfg["port"])
				}
				seen[cfg["port"]] = true
				if role, err := m.Role(ctx); err != nil || role != "master" {
					t.Fatalf("%s: ROLE %q, %v", m.Name(), role, err)
				}
			}
		})
	}
}

// The official toxiproxy client (what toxiproxy-cli uses) sees the embedded
// server's proxies and toxics, and changes made through it take effect.
func TestToxiproxyAPIWithOfficialClient(t *testing.T) {
	c := StartT(t, Topology{Masters: 2})
	ctx := bounded(t, 10*time.Second)
	tc := toxiclient.NewClient(c.ToxiproxyURL())
	proxies, err := tc.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, p := range proxies {
		names = append(names, name)
		n := c.Node(name)
		if n == nil {
			t.Fatalf("unknown proxy %q", name)
		}
		if p.Listen != n.Addr() || p.Upstream != n.DirectAddr() || !p.Enabled {
			t.Fatalf("proxy %s = %+v, node addr %s direct %s", name, p, n.Addr(), n.DirectAddr())
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "m0,m1" {
		t.Fatalf("proxies %v, want m0,m1", names)
	}

	// A toxic added by the harness is listed by the client...
	f := &Partition{Proxy: c.Masters[0].Proxy()}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	p0, err := tc.Proxy("m0")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := p0.Toxics()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("toxics through the API: %+v, want the two partition toxics", ts)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	// ...and a proxy disabled through the client refuses connections.
	p1, err := tc.Proxy("m1")
	if err != nil {
		t.Fatal(err)
	}
	if err := p1.Disable(); err != nil {
		t.Fatal(err)
	}
	cl := client(t, c.Masters[1].Options())
	if err, _ := pingWithin(ctx, cl, time.Second); !isRefused(err) {
		t.Fatalf("PING through a proxy disabled via the API: %v, want connection refused", err)
	}
	if err := p1.Enable(); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatalf("PING after Enable: %v", err)
	}
}

func TestGroupReplicatesThroughPeerProxy(t *testing.T) {
	c := StartT(t, Topology{Groups: 1})
	ctx := bounded(t, 15*time.Second)
	g := c.Groups[0]
	m, r := g.Master(), g.Replicas()[0]
	if m.Name() != "g0n0" || r.Name() != "g0n1" {
		t.Fatalf("master %s replica %s", m.Name(), r.Name())
	}
	// The replica's master is the master's peer proxy, not the server.
	info, err := r.Admin().Info(ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := infoField(info, "master_host") + ":" + infoField(info, "master_port"); got != m.PeerAddr() {
		t.Fatalf("replica replicates from %s, want the peer proxy %s", got, m.PeerAddr())
	}
	if role, _ := r.Role(ctx); role != "slave" {
		t.Fatalf("replica ROLE %q", role)
	}
	if n, err := g.Refresh(ctx); err != nil || n != m {
		t.Fatalf("Refresh = %v, %v; want %s", n, err, m.Name())
	}
	cl := client(t, g.Options())
	if err := cl.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Admin().Get(ctx, "x").Result(); v != "1" {
		t.Fatalf("replica has x=%q", v)
	}
}

func TestSentinelTopologyReady(t *testing.T) {
	c := StartT(t, Topology{Groups: 1, Sentinels: 3})
	ctx := bounded(t, 10*time.Second)
	g := c.Groups[0]
	if len(g.SentinelAddrs()) != 3 {
		t.Fatalf("sentinels %v", g.SentinelAddrs())
	}
	n, err := g.Refresh(ctx)
	if err != nil || n != c.Node("g0n0") {
		t.Fatalf("sentinels name %v as master (%v), want g0n0", n, err)
	}
}
