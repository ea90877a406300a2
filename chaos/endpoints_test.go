package chaos

import (
	"errors"
	"testing"
	"time"
)

// The endpoint backend drives someone else's toxiproxy over its HTTP API.
// Here "someone else's" is a local cluster's embedded toxiproxy, reached
// only by URL and addresses, as docker-compose would be.
func TestConnectToGivenEndpoints(t *testing.T) {
	infra := StartT(t, Topology{Masters: 1, Groups: 1})
	ctx := bounded(t, 30*time.Second)
	m0 := infra.Masters[0]
	g := infra.Groups[0]
	node := func(n *Node) Endpoint {
		ep := Endpoint{Client: ProxySpec{Name: n.Name()}, Admin: n.DirectAddr()}
		if n.PeerProxy() != nil {
			ep.Peer = ProxySpec{Name: n.PeerProxy().Name()}
		}
		return ep
	}
	e := Endpoints{
		ToxiproxyURL: infra.ToxiproxyURL(),
		Masters: []Endpoint{
			node(m0),
			// A proxy that Connect creates through the API.
			{Client: ProxySpec{Name: "extra", Listen: "127.0.0.1:0", Upstream: m0.DirectAddr()}},
		},
		Groups: []GroupEndpoints{{Name: g.Name(), Nodes: []Endpoint{node(g.Nodes()[0]), node(g.Nodes()[1])}}},
	}
	c, err := Connect(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if c.Backend() != "endpoints" || c.Toxiproxy() != nil {
		t.Fatalf("backend %s", c.Backend())
	}
	em0, extra := c.Masters[0], c.Masters[1]
	if em0.Addr() != m0.Addr() {
		t.Fatalf("m0 at %s through the API, %s embedded", em0.Addr(), m0.Addr())
	}
	if extra.Addr() == "" || extra.Addr() == "127.0.0.1:0" {
		t.Fatalf("created proxy listens at %q", extra.Addr())
	}
	if got := c.Groups[0].Master().Name(); got != "g0n0" {
		t.Fatalf("group master %s", got)
	}

	// A partition made over the API is felt by clients of the embedded proxy.
	cl := client(t, m0.Options())
	ex := client(t, extra.Options())
	if err := ex.Set(ctx, "via-extra", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := m0.Admin().Get(ctx, "via-extra").Result(); v != "1" {
		t.Fatal("created proxy does not lead to m0")
	}
	f := &Partition{Proxy: em0.Proxy()}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err, took := pingWithin(ctx, cl, deadline); !isTimeout(err) {
		t.Fatalf("PING through an API-made partition: %v after %v", err, took)
	}
	if names, _ := m0.Proxy().Toxics(); len(names) != 2 {
		t.Fatalf("embedded proxy sees toxics %v", names)
	}
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := pingWithin(ctx, cl, time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}

	// A failover over the API and admin connections.
	p := &Promote{Group: c.Groups[0]}
	if err := p.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if role, _ := g.Nodes()[1].Role(ctx); role != "master" {
		t.Fatalf("replica ROLE %q after Promote over endpoints", role)
	}
	if err := p.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if role, _ := g.Nodes()[0].Role(ctx); role != "slave" {
		t.Fatalf("old master ROLE %q after heal", role)
	}

	// No process control was given: process faults say so.
	if err := (&Pause{Node: em0}).Inject(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Pause on an endpoint without Process: %v", err)
	}
	if err := (&ClockSkew{Node: em0, Rate: 2}).Inject(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ClockSkew on an endpoint: %v", err)
	}
}
