package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	mobyclient "github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
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

// startDocker starts independent masters as containers (testcontainers-go,
// Redis module) with an embedded toxiproxy in front of each. Groups need the
// replica to reach a proxy in this process from inside Docker, which is not
// portable; use the local backend or given endpoints for them.
func startDocker(ctx context.Context, topo Topology) (_ *Cluster, err error) {
	if topo.Groups > 0 || topo.Sentinels > 0 {
		return nil, fmt.Errorf("%w: the Docker backend starts independent masters only; use the Local backend or Connect (docker-compose) for groups", ErrUnsupported)
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
	image := topo.Image
	if image == "" {
		image = RedisImage()
	}
	args := persistenceArgs(topo.Persistence)
	for _, e := range topo.Extra {
		args = append(args, extraArgs(e)...)
	}
	labels := dockerLabels()
	for i := 0; i < topo.Masters; i++ {
		rc, err := tcredis.Run(ctx, image,
			testcontainers.WithCmdArgs(args...),
			testcontainers.WithLabels(labels),
			testcontainers.WithHostConfigModifier(publishOnLoopback),
			// The module's own wait probes the port from inside the
			// container with cat, nc or bash, which a minimal image
			// (docker/redis.Dockerfile) lacks, and from outside at
			// testcontainers' Host, which is not where the port is bound
			// (see containerAddr). The log line suffices: the published
			// port listens from the container's start.
			testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
		)
		if rc != nil {
			c.onClose(func() error { return testcontainers.TerminateContainer(rc) })
		}
		if err != nil {
			return nil, fmt.Errorf("chaos: start container: %w", err)
		}
		addr, err := containerAddr(ctx, rc)
		if err != nil {
			return nil, err
		}
		if err := awaitPing(ctx, addr); err != nil {
			return nil, err
		}
		name := "m" + strconv.Itoa(i)
		px, err := c.tp.NewProxy(name, addr)
		if err != nil {
			return nil, err
		}
		n := &Node{name: name, proxy: px, direct: addr, c: c}
		n.proc = &containerProcess{c: rc, dc: dc, n: n}
		c.onClose(n.closeAdmin)
		c.Masters = append(c.Masters, n)
	}
	return c, nil
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

// publishOnLoopback publishes the Redis port on 127.0.0.1 only (a free
// host port): nothing but this machine reaches the servers.
func publishOnLoopback(hc *container.HostConfig) {
	hc.PortBindings = network.PortMap{
		network.MustParsePort("6379/tcp"): {{HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1})}},
	}
}

// containerAddr is where this machine reaches a container's Redis: the
// host port publishOnLoopback bound on 127.0.0.1. (testcontainers' Host
// names the bridge gateway when the tests themselves run in a container,
// which a loopback-only port does not answer on; so the engine must be
// local, as it is for every backend here.)
func containerAddr(ctx context.Context, c testcontainers.Container) (string, error) {
	p, err := c.MappedPort(ctx, "6379/tcp")
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
	addr, err := containerAddr(ctx, p.c)
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
