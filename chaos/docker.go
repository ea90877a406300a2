package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	mobyclient "github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/quorumlock/quorumlock/localredis"
)

// ErrNoDocker says no Docker engine answered.
var ErrNoDocker = errors.New("chaos: no Docker engine answers (the Docker backend needs one; the local backend does not)")

// DockerAvailable reports whether a Docker engine answers, within 5 s at
// most: nil if it does, an error wrapping ErrNoDocker if not. Nothing else in
// this package needs Docker; use it to choose Topology.Backend at run time.
// Set QUORUMLOCK_NO_DOCKER to skip the probe entirely.
func DockerAvailable(ctx context.Context) (err error) {
	if os.Getenv("QUORUMLOCK_NO_DOCKER") != "" {
		return fmt.Errorf("%w: QUORUMLOCK_NO_DOCKER is set", ErrNoDocker)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// testcontainers panics in some misconfigured environments instead of
	// returning an error; a probe must not take the caller down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNoDocker, r)
		}
	}()
	done := make(chan error, 1)
	go func() {
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			done <- err
			return
		}
		done <- p.Health(ctx) // Health closes the provider
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNoDocker, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrNoDocker, ctx.Err())
	}
}

// startDocker starts every node as a container (testcontainers-go, Redis
// module) with an embedded toxiproxy in front of each for clients, as the
// local backend does. Master+replica groups share a Docker network with a
// toxiproxy container that carries their replication (the peer proxies,
// driven over its HTTP API), so the link can be cut as on the local
// backend. Sentinels are not started on Docker.
func startDocker(ctx context.Context, topo Topology) (_ *Cluster, err error) {
	if topo.Sentinels > 0 {
		return nil, fmt.Errorf("%w: the Docker backend starts no sentinels; use the Local backend or Connect (docker-compose) for them", ErrUnsupported)
	}
	if err := DockerAvailable(ctx); err != nil {
		return nil, err
	}
	c, err := newCluster("docker")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	c.onClose(dc.Close)
	d := &dockerNodes{c: c, dc: dc, image: topo.Image, labels: dockerLabels()}
	if d.image == "" {
		d.image = RedisImage()
	}
	d.args = append(persistenceArgs(topo.Persistence), "--repl-diskless-sync-delay", "0")
	for _, e := range topo.Extra {
		d.args = append(d.args, extraArgs(e)...)
	}
	for i := 0; i < topo.Masters; i++ {
		n, err := d.start(ctx, "m"+strconv.Itoa(i), nil)
		if err != nil {
			return nil, err
		}
		c.Masters = append(c.Masters, n)
	}
	for gi := 0; gi < topo.Groups; gi++ {
		g, err := d.startGroup(ctx, gi, topo.replicas())
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
	return c, nil
}

// dockerNodes starts the containers of one cluster.
type dockerNodes struct {
	c      *Cluster
	dc     *testcontainers.DockerClient
	image  string
	args   []string
	labels map[string]string

	// For groups: the cluster's network and the toxiproxy container on it.
	net      *testcontainers.DockerNetwork
	peerAPI  *toxiclient.Client
	peerPort int
}

// start runs one Redis container and puts a client proxy in front of it;
// extra options attach it to the group network.
func (d *dockerNodes) start(ctx context.Context, name string, extraArgs []string, opts ...testcontainers.ContainerCustomizer) (*Node, error) {
	opts = append([]testcontainers.ContainerCustomizer{
		testcontainers.WithCmdArgs(append(append([]string(nil), d.args...), extraArgs...)...),
		testcontainers.WithLabels(d.labels),
		testcontainers.WithHostConfigModifier(publishOnLoopback("6379/tcp")),
		// The module's own wait probes the port from inside the
		// container with cat, nc or bash, which a minimal image
		// (docker/redis.Dockerfile) lacks, and from outside at
		// testcontainers' Host, which is not where the port is bound
		// (see containerAddr). The log line and awaitPing suffice.
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
	}, opts...)
	var rc *tcredis.RedisContainer
	err := retryPortRace(func() (err error) {
		rc, err = tcredis.Run(ctx, d.image, opts...)
		if err != nil && rc != nil && portRace(err) {
			_ = testcontainers.TerminateContainer(rc)
			rc = nil
		}
		return err
	})
	if rc != nil {
		d.c.onClose(func() error { return testcontainers.TerminateContainer(rc) })
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: start container %s: %w", name, err)
	}
	addr, err := containerAddr(ctx, rc, "6379/tcp")
	if err != nil {
		return nil, err
	}
	if err := awaitPing(ctx, addr); err != nil {
		return nil, err
	}
	px, err := d.c.tp.NewProxy(name, addr)
	if err != nil {
		return nil, err
	}
	n := &Node{name: name, proxy: px, direct: addr, c: d.c}
	n.proc = &containerProcess{c: rc, dc: d.dc, n: n}
	d.c.onClose(n.closeAdmin)
	return n, nil
}

// portRace is a container start that lost its published host port: the
// engine picks a free ephemeral port and binds it a moment later, and
// another process (a second engine on this machine, a test's own server)
// can take it in between ("bind: address already in use"). Three CI runs
// at once hit it. The start is tried again, with a port picked anew.
func portRace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// retryPortRace runs start up to three times while it fails by portRace.
func retryPortRace(start func() error) error {
	var err error
	for range 3 {
		if err = start(); !portRace(err) {
			return err
		}
	}
	return err
}

// groupNet creates, once per cluster, the network groups share and the
// toxiproxy container on it (alias "toxiproxy") whose API is published on
// 127.0.0.1.
func (d *dockerNodes) groupNet(ctx context.Context) error {
	if d.net != nil {
		return nil
	}
	nw, err := tcnetwork.New(ctx, tcnetwork.WithLabels(d.labels))
	if err != nil {
		return fmt.Errorf("chaos: create docker network: %w", err)
	}
	d.net = nw
	d.c.onClose(func() error { return nw.Remove(context.Background()) })
	var tc testcontainers.Container
	err = retryPortRace(func() (err error) {
		tc, err = testcontainers.Run(ctx, ToxiproxyImage(),
			testcontainers.WithCmd("-host=0.0.0.0"),
			testcontainers.WithExposedPorts("8474/tcp"),
			testcontainers.WithLabels(d.labels),
			testcontainers.WithHostConfigModifier(publishOnLoopback("8474/tcp")),
			tcnetwork.WithNetwork([]string{"toxiproxy"}, nw),
		)
		if err != nil && tc != nil && portRace(err) {
			_ = testcontainers.TerminateContainer(tc)
			tc = nil
		}
		return err
	})
	if tc != nil {
		d.c.onClose(func() error { return testcontainers.TerminateContainer(tc) })
	}
	if err != nil {
		return fmt.Errorf("chaos: start toxiproxy container: %w", err)
	}
	api, err := containerAddr(ctx, tc, "8474/tcp")
	if err != nil {
		return err
	}
	d.peerAPI = toxiclient.NewClient("http://" + api)
	// The official client keeps idle connections in the default transport.
	d.c.onClose(func() error {
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
		return nil
	})
	d.peerPort = 7400
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		_, err := d.peerAPI.Proxies()
		if err == nil {
			return nil
		}
		select {
		case <-actx.Done():
			return fmt.Errorf("chaos: toxiproxy container at %s does not answer: %w", api, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startGroup starts group gi: its peer proxies in the toxiproxy container
// first (upstreams are resolved per connection, so they may precede the
// nodes), then the nodes, which announce and replicate through them.
func (d *dockerNodes) startGroup(ctx context.Context, gi, replicas int) (*Group, error) {
	if err := d.groupNet(ctx); err != nil {
		return nil, err
	}
	g := &Group{name: "g" + strconv.Itoa(gi), c: d.c}
	type peer struct {
		name, alias string
		px          *Proxy
	}
	peers := make([]peer, replicas+1)
	for j := range peers {
		name := g.name + "n" + strconv.Itoa(j)
		alias := d.labels["org.quorumlock.cluster"] + "-" + name
		listen := "0.0.0.0:" + strconv.Itoa(d.peerPort)
		d.peerPort++
		api, err := d.peerAPI.CreateProxy(name+"-peer", listen, alias+":6379")
		if err != nil {
			return nil, fmt.Errorf("chaos: create peer proxy of %s: %w", name, err)
		}
		peers[j] = peer{name: name, alias: alias,
			px: &Proxy{name: api.Name, api: api, listen: "toxiproxy:" + portOf(listen)}}
	}
	for j, p := range peers {
		args := []string{"--replica-announce-ip", "toxiproxy", "--replica-announce-port", portOf(p.px.Addr())}
		if j > 0 {
			args = append(args, "--replicaof", "toxiproxy", portOf(peers[0].px.Addr()))
		}
		n, err := d.start(ctx, p.name, args, tcnetwork.WithNetwork([]string{p.alias}, d.net))
		if err != nil {
			return nil, err
		}
		n.peer, n.peerAddr, n.group = p.px, p.px.Addr(), g
		g.nodes = append(g.nodes, n)
	}
	g.master = g.nodes[0]
	return g, nil
}

// ToxiproxyImage is the toxiproxy image of the Docker backend's groups:
// $QUORUMLOCK_TOXIPROXY_IMAGE, or the official
// "ghcr.io/shopify/toxiproxy:2.12.0".
func ToxiproxyImage() string {
	if img := os.Getenv(ToxiproxyImageEnv); img != "" {
		return img
	}
	return "ghcr.io/shopify/toxiproxy:2.12.0"
}

// Environment variables that choose the images of the Docker backend and of
// docker-compose.yml. docker/build-images.sh builds both without a
// registry and prints these variables.
const (
	RedisImageEnv     = "QUORUMLOCK_REDIS_IMAGE"
	ToxiproxyImageEnv = "QUORUMLOCK_TOXIPROXY_IMAGE"
	// DockerRunEnv labels every container this process starts
	// (org.quorumlock.run=<value>), so a script can remove what a crashed
	// test left behind without touching other runs' containers.
	DockerRunEnv = "QUORUMLOCK_DOCKER_RUN"
)

// RedisImage is the Redis image of the Docker backend: $QUORUMLOCK_REDIS_IMAGE,
// or the official "redis:7.0" (which needs a registry to pull from).
func RedisImage() string {
	if img := os.Getenv(RedisImageEnv); img != "" {
		return img
	}
	return "redis:7.0"
}

// dockerLabels mark a cluster's containers: as quorumlock's, with the run of
// $QUORUMLOCK_DOCKER_RUN, and with an id of their own.
func dockerLabels() map[string]string {
	l := map[string]string{
		"org.quorumlock.chaos":   "1",
		"org.quorumlock.cluster": strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid()),
	}
	if run := os.Getenv(DockerRunEnv); run != "" {
		l["org.quorumlock.run"] = run
	}
	return l
}

func persistenceArgs(p localredis.Persistence) []string {
	switch p {
	case localredis.AOF:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	case localredis.AOFAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--save", "", "--appendonly", "no"}
}

func extraArgs(directive string) []string {
	var out []string
	for i, f := range strings.Fields(directive) {
		if i == 0 {
			f = "--" + f
		}
		out = append(out, f)
	}
	return out
}

// publishOnLoopback publishes a container port on 127.0.0.1 only (a free
// host port): nothing but this machine reaches the containers.
func publishOnLoopback(port string) func(*container.HostConfig) {
	return func(hc *container.HostConfig) {
		hc.PortBindings = network.PortMap{
			network.MustParsePort(port): {{HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1})}},
		}
	}
}

// containerAddr is where this machine reaches a container's Redis: the
// host port publishOnLoopback bound on 127.0.0.1. (testcontainers' Host
// names the bridge gateway when the tests themselves run in a container,
// which a loopback-only port does not answer on; so the engine must be
// local, as it is for every backend here.)
func containerAddr(ctx context.Context, c testcontainers.Container, port string) (string, error) {
	p, err := c.MappedPort(ctx, port)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", p.Port()), nil
}

// awaitPing waits up to 20 s for the server at addr to answer PING: the
// published port accepts (and drops) connections before Redis listens.
func awaitPing(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cl := redis.NewClient(localredis.ClientOptions(addr))
	defer cl.Close()
	for {
		err := cl.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: container at %s does not answer PING: %w", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// containerProcess controls a node's container: pause is the cgroup freezer
// (docker pause), kill is SIGKILL, restart starts the container again and
// re-points the node's proxy (Docker may map a new host port).
type containerProcess struct {
	c  testcontainers.Container
	dc *testcontainers.DockerClient
	n  *Node
	mu sync.Mutex
}

func (p *containerProcess) Pause(ctx context.Context) error {
	_, err := p.dc.ContainerPause(ctx, p.c.GetContainerID(), mobyclient.ContainerPauseOptions{})
	return err
}

func (p *containerProcess) Resume(ctx context.Context) error {
	_, err := p.dc.ContainerUnpause(ctx, p.c.GetContainerID(), mobyclient.ContainerUnpauseOptions{})
	return err
}

func (p *containerProcess) Kill(ctx context.Context) error {
	_, err := p.dc.ContainerKill(ctx, p.c.GetContainerID(), mobyclient.ContainerKillOptions{Signal: "KILL"})
	return err
}

func (p *containerProcess) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.c.Start(ctx); err != nil {
		return err
	}
	addr, err := containerAddr(ctx, p.c, "6379/tcp")
	if err != nil {
		return err
	}
	// The log line the start waited for may be the previous run's.
	if err := awaitPing(ctx, addr); err != nil {
		return err
	}
	p.n.setDirect(addr)
	return p.n.proxy.SetUpstream(ctx, addr)
}

func (p *containerProcess) WipeData(context.Context) error {
	return fmt.Errorf("%w: wiping a stopped container's data", ErrUnsupported)
}
