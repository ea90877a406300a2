package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// Endpoints describe a cluster that runs elsewhere — docker-compose (see
// ComposeEndpoints and docker-compose.yml at the repository root), a staging
// environment — with a toxiproxy server in front of its nodes. Connect
// turns them into a Cluster on which the same faults and scenarios run.
type Endpoints struct {
	// ToxiproxyURL is the toxiproxy HTTP API, e.g. "http://127.0.0.1:8474".
	ToxiproxyURL string
	// Masters are independent masters.
	Masters []Endpoint
	// Groups are master+replica groups.
	Groups []GroupEndpoints
}

// ProxySpec names a toxiproxy proxy. With Listen and Upstream set, Connect
// creates it (or replaces one of the same name that differs).
type ProxySpec struct {
	// Name of the proxy in toxiproxy; a client proxy's name is the node's name.
	Name string
	// Listen is the proxy's listen address inside the toxiproxy host
	// ("0.0.0.0:7400").
	Listen string
	// Upstream is the node as toxiproxy reaches it ("m0:6379").
	Upstream string
	// Addr is how the proxy's users dial it: from this machine for a client
	// proxy ("127.0.0.1:7400"); from the other nodes and the sentinels for a
	// peer proxy ("toxiproxy:7407"). Empty means the listen address that
	// toxiproxy reports (right when toxiproxy runs on this machine).
	Addr string
}

// Endpoint is one node.
type Endpoint struct {
	// Client is the proxy clients use.
	Client ProxySpec
	// Peer is the proxy replicas and sentinels use (group nodes only).
	Peer ProxySpec
	// Admin is the node's own address from this machine, bypassing
	// toxiproxy; optional (without it, admin commands go through the client
	// proxy and fail while the node is partitioned).
	Admin string
	// Process controls the node's process; optional (without it, pause,
	// crash and clock faults return ErrUnsupported).
	Process Process
}

// GroupEndpoints is a master+replica group, optionally with sentinels.
type GroupEndpoints struct {
	// Name is the group's name and the master name its sentinels monitor.
	Name string
	// Nodes of the group; the one that answers ROLE as master is taken as
	// master (Nodes[0] if none answers).
	Nodes []Endpoint
	// Sentinels are the sentinels' addresses from this machine.
	Sentinels []string
}

// Connect builds a Cluster from given endpoints: it creates the proxies
// that are fully specified, checks that every node answers PING through its
// client proxy, and finds each group's master. Close releases only what
// Connect made in this process; the servers and toxiproxy keep running.
func Connect(ctx context.Context, e Endpoints) (_ *Cluster, err error) {
	if e.ToxiproxyURL == "" {
		return nil, errors.New("chaos: Endpoints.ToxiproxyURL is empty")
	}
	tc := toxiclient.NewClient(e.ToxiproxyURL)
	c := &Cluster{backend: "endpoints", apiURL: e.ToxiproxyURL}
	// The official client keeps idle HTTP connections in the default
	// transport; drop them with the cluster.
	c.onClose(func() error {
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
		return nil
	})
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	var create []toxiclient.Proxy
	addSpec := func(s ProxySpec) {
		if s.Name != "" && s.Listen != "" && s.Upstream != "" {
			create = append(create, toxiclient.Proxy{Name: s.Name, Listen: s.Listen, Upstream: s.Upstream, Enabled: true})
		}
	}
	for _, m := range e.Masters {
		addSpec(m.Client)
	}
	for _, g := range e.Groups {
		for _, n := range g.Nodes {
			addSpec(n.Client)
			addSpec(n.Peer)
		}
	}
	if len(create) > 0 {
		if _, err := tc.Populate(create); err != nil {
			return nil, fmt.Errorf("chaos: create proxies at %s: %w", e.ToxiproxyURL, err)
		}
	}
	proxy := func(s ProxySpec) (*Proxy, error) {
		px, err := tc.Proxy(s.Name)
		if err != nil {
			return nil, fmt.Errorf("chaos: proxy %q at %s: %w", s.Name, e.ToxiproxyURL, err)
		}
		return &Proxy{name: s.Name, api: px, listen: s.Addr}, nil
	}
	node := func(ep Endpoint, g *Group) (*Node, error) {
		px, err := proxy(ep.Client)
		if err != nil {
			return nil, err
		}
		n := &Node{name: ep.Client.Name, proxy: px, direct: ep.Admin, proc: ep.Process, group: g, c: c}
		if g != nil {
			if n.peer, err = proxy(ep.Peer); err != nil {
				return nil, err
			}
			n.peerAddr = n.peer.Addr()
		}
		c.onClose(n.closeAdmin)
		return n, nil
	}
	for _, m := range e.Masters {
		n, err := node(m, nil)
		if err != nil {
			return nil, err
		}
		c.Masters = append(c.Masters, n)
	}
	for _, ge := range e.Groups {
		if len(ge.Nodes) == 0 {
			return nil, fmt.Errorf("chaos: group %q has no nodes", ge.Name)
		}
		g := &Group{name: ge.Name, sentinels: ge.Sentinels, c: c}
		for _, ne := range ge.Nodes {
			n, err := node(ne, g)
			if err != nil {
				return nil, err
			}
			g.nodes = append(g.nodes, n)
		}
		g.master = g.nodes[0]
		for _, n := range g.nodes {
			if role, err := n.Role(ctx); err == nil && role == "master" {
				g.master = n
				break
			}
		}
		c.Groups = append(c.Groups, g)
	}
	for _, n := range c.Nodes() {
		cl := n.Client()
		err := cl.Ping(ctx).Err()
		_ = cl.Close()
		if err != nil {
			return nil, fmt.Errorf("chaos: node %s does not answer through its proxy %s: %w", n.name, n.Addr(), err)
		}
	}
	return c, nil
}

// Ports of the layout in docker-compose.yml.
const (
	ComposeToxiproxyPort = 8474
	composeClientBase    = 7400 // client proxies: m0…m4, g0n0, g0n1
	composePeerBase      = 7407 // peer proxies (inside the compose network): g0n0-peer, g0n1-peer
	composeAdminBase     = 7410 // nodes' own ports published for admin commands
	composeSentinelBase  = 7420 // sentinels
	ComposeMasters       = 5
)

// ComposeEndpoints returns the endpoints of the docker-compose.yml at the
// repository root, reached from host (""= 127.0.0.1): five independent
// masters m0…m4, the group g0 (g0n0 master, g0n1 replica) with sentinels
// g0s0…g0s2, and toxiproxy on port 8474. With file set (the compose file's
// path), nodes get a ComposeProcess, so pause and crash faults work too.
func ComposeEndpoints(host, file string) Endpoints {
	if host == "" {
		host = "127.0.0.1"
	}
	hp := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	e := Endpoints{ToxiproxyURL: "http://" + hp(ComposeToxiproxyPort)}
	proc := func(svc string) Process {
		if file == "" {
			return nil
		}
		return &ComposeProcess{File: file, Service: svc}
	}
	for i := 0; i < ComposeMasters; i++ {
		name := "m" + strconv.Itoa(i)
		port := composeClientBase + i
		e.Masters = append(e.Masters, Endpoint{
			Client:  ProxySpec{Name: name, Listen: "0.0.0.0:" + strconv.Itoa(port), Upstream: name + ":6379", Addr: hp(port)},
			Admin:   hp(composeAdminBase + i),
			Process: proc(name),
		})
	}
	g := GroupEndpoints{Name: "g0"}
	for j := 0; j < 2; j++ {
		name := "g0n" + strconv.Itoa(j)
		cport := composeClientBase + ComposeMasters + j
		pport := composePeerBase + j
		g.Nodes = append(g.Nodes, Endpoint{
			Client:  ProxySpec{Name: name, Listen: "0.0.0.0:" + strconv.Itoa(cport), Upstream: name + ":6379", Addr: hp(cport)},
			Peer:    ProxySpec{Name: name + "-peer", Listen: "0.0.0.0:" + strconv.Itoa(pport), Upstream: name + ":6379", Addr: "toxiproxy:" + strconv.Itoa(pport)},
			Admin:   hp(composeAdminBase + ComposeMasters + j),
			Process: proc(name),
		})
	}
	for k := 0; k < 3; k++ {
		g.Sentinels = append(g.Sentinels, hp(composeSentinelBase+k))
	}
	e.Groups = []GroupEndpoints{g}
	return e
}

// ComposeProcess controls a docker-compose service with the docker CLI
// (docker compose pause/unpause/kill/start). Wiping data is not supported.
type ComposeProcess struct {
	File    string // path of the compose file
	Service string
	// Project is the compose project name ("" means the file's name:).
	Project string
}

func (p *ComposeProcess) run(ctx context.Context, args ...string) error {
	full := []string{"compose", "-f", p.File}
	if p.Project != "" {
		full = append(full, "-p", p.Project)
	}
	full = append(full, args...)
	full = append(full, p.Service)
	out, err := exec.CommandContext(ctx, "docker", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: docker %v: %w: %s", full, err, out)
	}
	return nil
}

// Pause runs docker compose pause.
func (p *ComposeProcess) Pause(ctx context.Context) error { return p.run(ctx, "pause") }

// Resume runs docker compose unpause.
func (p *ComposeProcess) Resume(ctx context.Context) error { return p.run(ctx, "unpause") }

// Kill runs docker compose kill -s SIGKILL.
func (p *ComposeProcess) Kill(ctx context.Context) error { return p.run(ctx, "kill", "-s", "SIGKILL") }

// Restart runs docker compose start and gives the server a moment to load.
func (p *ComposeProcess) Restart(ctx context.Context) error {
	if err := p.run(ctx, "start"); err != nil {
		return err
	}
	sleep(ctx, 500*time.Millisecond)
	return nil
}

// WipeData is not supported for compose services.
func (p *ComposeProcess) WipeData(context.Context) error {
	return fmt.Errorf("%w: wiping a compose service's data", ErrUnsupported)
}
