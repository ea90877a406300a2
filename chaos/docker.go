package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	mobyclient "github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"

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
		image = "redis:7.0"
	}
	args := persistenceArgs(topo.Persistence)
	for _, e := range topo.Extra {
		args = append(args, extraArgs(e)...)
	}
	for i := 0; i < topo.Masters; i++ {
		rc, err := tcredis.Run(ctx, image, testcontainers.WithCmdArgs(args...))
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

func containerAddr(ctx context.Context, c testcontainers.Container) (string, error) {
	host, err := c.Host(ctx)
	if err != nil {
		return "", err
	}
	p, err := c.MappedPort(ctx, "6379/tcp")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, p.Port()), nil
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
	p.n.setDirect(addr)
	return p.n.proxy.SetUpstream(ctx, addr)
}

func (p *containerProcess) WipeData(context.Context) error {
	return fmt.Errorf("%w: wiping a stopped container's data", ErrUnsupported)
}
