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

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/lockkeys"
	"github.com/quorumlock/quorumlock/localredis"
)

// Backend says where a topology's Redis servers run.
type Backend int

const (
	// Local runs redis-server processes on this machine (localredis). The
	// default, and the only backend with every fault (clock faults need it).
	Local Backend = iota
	// Docker runs one container per node with testcontainers-go. It needs a
	// Docker engine (see DockerAvailable) and supports independent masters
	// and master+replica groups, without sentinels or clock faults.
	Docker
)

func (b Backend) String() string {
	switch b {
	case Local:
		return "local"
	case Docker:
		return "docker"
	}
	return "Backend(" + strconv.Itoa(int(b)) + ")"
}

// Topology describes a cluster to start. Every node gets a toxiproxy proxy in
// front of it for clients; nodes of master+replica groups get a second one,
// the peer proxy, that carries replication and sentinel traffic, so the
// "replication link" can be cut while clients still reach the node.
type Topology struct {
	// Masters is the number of independent masters (m0, m1, …), e.g. 1, 3,
	// 5, 7 for RedLock.
	Masters int
	// Groups is the number of master+replica groups (g0, g1, …). Node g0n0
	// starts as master, g0n1… as its replicas.
	Groups int
	// Replicas per group; 0 means 1.
	Replicas int
	// Sentinels per group watching it for automatic failover (0: none; 3 is
	// the usual). Sentinels reach the nodes through their peer proxies.
	Sentinels int
	// SentinelDownAfter is sentinel's down-after-milliseconds; 0 means 500 ms.
	SentinelDownAfter time.Duration
	// SentinelFailoverTimeout is sentinel's failover-timeout; 0 means 3 s.
	SentinelFailoverTimeout time.Duration
	// Persistence of every data node; the zero value is none (unlike a
	// bare localredis.Config, whose zero value is fsync-always AOF): crash
	// scenarios without persistence rely on it.
	Persistence localredis.Persistence
	// Extra config directives for every data node ("name value").
	Extra []string
	// Backend defaults to Local.
	Backend Backend
	// Image is the Redis image for the Docker backend; "" means RedisImage()
	// ($QUORUMLOCK_REDIS_IMAGE, else "redis:7.0").
	Image string
}

func (t Topology) replicas() int {
	if t.Replicas <= 0 {
		return 1
	}
	return t.Replicas
}

func (t Topology) validate() error {
	if t.Masters < 0 || t.Groups < 0 || t.Sentinels < 0 {
		return fmt.Errorf("chaos: negative counts in topology %+v", t)
	}
	if t.Masters == 0 && t.Groups == 0 {
		return errors.New("chaos: empty topology: set Masters or Groups")
	}
	if t.Sentinels > 0 && t.Groups == 0 {
		return errors.New("chaos: sentinels need a group to watch: set Groups")
	}
	return nil
}

// Cluster is a running topology: its nodes, the proxies in front of them and
// the toxiproxy that owns those proxies. Close tears everything down.
type Cluster struct {
	// Masters are the independent masters, in order (m0, m1, …).
	Masters []*Node
	// Groups are the master+replica groups, in order (g0, g1, …).
	Groups []*Group

	backend string
	tp      *Toxiproxy // embedded toxiproxy; nil when given endpoints
	apiURL  string
	dir     string // scratch directory (sentinel configs, clock shim)

	closeMu sync.Mutex
	closers []func() error

	shimOnce sync.Once
	shim     string
	shimErr  error

	closeOnce sync.Once
	closeErr  error
}

// Nodes returns every data node: masters, then group nodes.
func (c *Cluster) Nodes() []*Node {
	out := append([]*Node(nil), c.Masters...)
	for _, g := range c.Groups {
		out = append(out, g.nodes...)
	}
	return out
}

// Node returns the data node with the given name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes() {
		if n.name == name {
			return n
		}
	}
	return nil
}

// Addrs returns the client addresses (through the proxies) of the
// independent masters, in order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Masters))
	for i, n := range c.Masters {
		out[i] = n.Addr()
	}
	return out
}

// Clients returns a new go-redis client per independent master, connected
// through its proxy with lock-safe options. The caller closes them.
func (c *Cluster) Clients() []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(c.Masters))
	for i, n := range c.Masters {
		out[i] = n.Client()
	}
	return out
}

// ToxiproxyURL is the toxiproxy HTTP API of this cluster, for toxiproxy-cli
// or the official client ("http://127.0.0.1:port").
func (c *Cluster) ToxiproxyURL() string { return c.apiURL }

// Toxiproxy is the embedded toxiproxy server, or nil when the cluster was
// given as endpoints.
func (c *Cluster) Toxiproxy() *Toxiproxy { return c.tp }

// Backend names where the nodes run: "local", "docker" or "endpoints".
func (c *Cluster) Backend() string { return c.backend }

// Dial is a go-redis Dialer that reaches nodes through their client proxies:
// an address that names a node (its server address or its peer proxy, as a
// sentinel reports it) is dialled at the node's client proxy; any other
// address (a sentinel) is dialled as is. Use it in redis.FailoverOptions so
// a sentinel-aware client goes through the faults too.
func (c *Cluster) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	target := addr
	for _, n := range c.Nodes() {
		if addr == n.DirectAddr() || (n.peer != nil && addr == n.PeerAddr()) {
			target = n.Addr()
			break
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}

// Close stops sentinels, proxies and servers, and removes scratch files. It
// is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.closeMu.Lock()
		closers := c.closers
		c.closers = nil
		c.closeMu.Unlock()
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		if c.dir != "" {
			errs = append(errs, os.RemoveAll(c.dir))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func (c *Cluster) onClose(f func() error) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	c.closers = append(c.closers, f)
}

// Node is one Redis server of a cluster as the harness sees it.
type Node struct {
	name  string
	proxy *Proxy // clients
	peer  *Proxy // replication and sentinels (group nodes only)
	group *Group

	// peerAddr is how other nodes and sentinels dial the peer proxy (for
	// local clusters the same as peer.Addr(); for endpoints it may be a
	// name inside a docker network).
	peerAddr string

	mu     sync.Mutex
	direct string // the server itself, bypassing proxies ("" if unknown)
	admin  *redis.Client
	proc   Process
	server *localredis.Server
	c      *Cluster
}

// Name is the node's name (m0, g0n1, …), also the name of its client proxy.
func (n *Node) Name() string { return n.name }

// Addr is the address clients dial: the node's client proxy.
func (n *Node) Addr() string { return n.proxy.Addr() }

// Proxy is the node's client proxy.
func (n *Node) Proxy() *Proxy { return n.proxy }

// PeerProxy is the proxy that carries the node's replication and sentinel
// traffic, or nil for an independent master.
func (n *Node) PeerProxy() *Proxy { return n.peer }

// PeerAddr is the address replicas and sentinels use to reach the node ("" for
// an independent master).
func (n *Node) PeerAddr() string { return n.peerAddr }

// DirectAddr is the server's own address, bypassing every proxy ("" when the
// backend does not expose it).
func (n *Node) DirectAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.direct
}

func (n *Node) setDirect(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.direct = addr
	if n.admin != nil {
		_ = n.admin.Close()
		n.admin = nil
	}
}

// Group is the master+replica group the node belongs to, or nil.
func (n *Node) Group() *Group { return n.group }

// Server is the local redis-server process, or nil for other backends.
func (n *Node) Server() *localredis.Server { return n.server }

// Options returns go-redis options for a client that reaches the node through
// its client proxy, with lock-safe settings (localredis.ClientOptions:
// context deadlines honoured, no hidden retries).
func (n *Node) Options() *redis.Options { return localredis.ClientOptions(n.Addr()) }

// Client returns a new client through the node's proxy; the caller closes it.
func (n *Node) Client() *redis.Client { return redis.NewClient(n.Options()) }

// Admin returns the harness's own client for the node, which bypasses the
// proxies when the server address is known (so it still works while the node
// is partitioned). It is owned by the cluster: do not close it. Always pass a
// context with a deadline: a paused node never answers.
func (n *Node) Admin() *redis.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.admin == nil {
		addr := n.direct
		if addr == "" {
			addr = n.proxy.Addr()
		}
		n.admin = redis.NewClient(localredis.ClientOptions(addr))
	}
	return n.admin
}

func (n *Node) closeAdmin() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.admin == nil {
		return nil
	}
	err := n.admin.Close()
	n.admin = nil
	return err
}

func (n *Node) process() (Process, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return nil, fmt.Errorf("%w: node %s has no process control (give Endpoint.Process)", ErrUnsupported, n.name)
	}
	return n.proc, nil
}

// restart starts a killed node again, in the role its group gives it now.
func (n *Node) restart(ctx context.Context) error {
	p, err := n.process()
	if err != nil {
		return err
	}
	if n.group != nil && n.server != nil {
		if m := n.group.Master(); m == n {
			n.server.SetReplicaOf("")
		} else {
			n.server.SetReplicaOf(m.PeerAddr())
		}
	}
	return p.Restart(ctx)
}

// Role asks the node (through the admin client) whether it is "master" or
// "slave" (Redis' words).
func (n *Node) Role(ctx context.Context) (string, error) {
	v, err := n.Admin().Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", fmt.Errorf("chaos: empty ROLE reply from %s", n.name)
	}
	s, _ := v[0].(string)
	return s, nil
}

// Process controls a node's server process. The local backend uses the
// redis-server process, the Docker backend the container; given endpoints
// may bring their own (e.g. ComposeProcess).
type Process interface {
	// Pause freezes the process; Resume continues it.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Kill ends it abruptly (SIGKILL), keeping its data files.
	Kill(ctx context.Context) error
	// Restart starts it again after Kill.
	Restart(ctx context.Context) error
	// WipeData removes its data files while it is down.
	WipeData(ctx context.Context) error
}

type localProcess struct{ s *localredis.Server }

func (p localProcess) Pause(context.Context) error  { return p.s.Pause() }
func (p localProcess) Resume(context.Context) error { return p.s.Resume() }
func (p localProcess) Kill(context.Context) error   { return p.s.Kill() }
func (p localProcess) Restart(ctx context.Context) error {
	return p.s.Restart(ctx)
}
func (p localProcess) WipeData(context.Context) error { return p.s.WipeData() }

// Running lets Crash.Recover see whether a restart is still needed.
func (p localProcess) Running() bool { return p.s.Running() }

// Group is a master with its replicas. Which node is master changes with
// failovers; Master follows it.
type Group struct {
	name      string
	nodes     []*Node
	sentinels []string
	quorum    int
	c         *Cluster

	mu     sync.Mutex
	master *Node
}

// Name is the group's name, also the master name its sentinels monitor.
func (g *Group) Name() string { return g.name }

// Nodes returns the group's nodes in their start order (n0 first).
func (g *Group) Nodes() []*Node { return append([]*Node(nil), g.nodes...) }

// Master is the node the harness last made (or saw become) master. Faults
// that change it (Promote, SentinelFailover) update it; when sentinels may
// have failed the group over by themselves (a watched master paused or
// crashed for longer than down-after-milliseconds), call Refresh.
func (g *Group) Master() *Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.master
}

func (g *Group) setMaster(n *Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.master = n
}

// Refresh asks who the master is — the sentinels' majority if the group has
// sentinels, else the one node whose ROLE is master — and records it.
func (g *Group) Refresh(ctx context.Context) (*Node, error) {
	if len(g.sentinels) > 0 {
		if n, ok := g.sentinelsAgree(ctx); ok {
			g.setMaster(n)
			return n, nil
		}
		return nil, fmt.Errorf("chaos: the sentinels of %s do not agree on a master", g.name)
	}
	var masters []*Node
	for _, n := range g.nodes {
		if role, err := n.Role(ctx); err == nil && role == "master" {
			masters = append(masters, n)
		}
	}
	if len(masters) != 1 {
		return nil, fmt.Errorf("chaos: group %s has %d nodes that say they are master", g.name, len(masters))
	}
	g.setMaster(masters[0])
	return masters[0], nil
}

// Replicas returns the nodes that are not Master.
func (g *Group) Replicas() []*Node {
	m := g.Master()
	var out []*Node
	for _, n := range g.nodes {
		if n != m {
			out = append(out, n)
		}
	}
	return out
}

// SentinelAddrs returns the addresses of the sentinels watching the group.
func (g *Group) SentinelAddrs() []string { return append([]string(nil), g.sentinels...) }

// Options returns client options whose connections go to the current
// master's client proxy, like a virtual IP that moves with failovers (open
// connections stay with the node they were made to, as with a real VIP).
func (g *Group) Options() *redis.Options {
	o := localredis.ClientOptions(g.name)
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, g.Master().Addr())
	}
	return o
}

// FailoverOptions returns options for a sentinel-aware client (go-redis
// NewFailoverClient) that asks the group's sentinels for the master and
// reaches it through its client proxy.
func (g *Group) FailoverOptions() *redis.FailoverOptions {
	o := localredis.ClientOptions("")
	return &redis.FailoverOptions{
		MasterName:            g.name,
		SentinelAddrs:         g.SentinelAddrs(),
		Dialer:                g.c.Dial,
		MaxRetries:            o.MaxRetries,
		DialTimeout:           o.DialTimeout,
		DialerRetries:         o.DialerRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	}
}

// WaitReplicated waits until every replica's link to the master is up and
// has caught up with the master's replication offset (as of the call), and
// the master counts every replica as online. The last part matters for WAIT:
// after a diskless full sync the master puts a replica online only on its
// first REPLCONF ACK, which replicas send once a second, and until then WAIT
// does not count it (up to a second of "0 replicas acknowledged" right
// after a start or a resync).
func (g *Group) WaitReplicated(ctx context.Context) error {
	m := g.Master()
	info, err := m.Admin().Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("chaos: INFO replication on %s: %w", m.name, err)
	}
	want, _ := strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
	for _, r := range g.Replicas() {
		for {
			info, err := r.Admin().Info(ctx, "replication").Result()
			if err == nil && infoField(info, "master_link_status") == "up" {
				off, _ := strconv.ParseInt(infoField(info, "slave_repl_offset"), 10, 64)
				if off >= want {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("chaos: replica %s of %s not in sync: %w (last error %v)", r.name, m.name, ctx.Err(), err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return g.waitOnline(ctx, m)
}

// waitOnline waits until master m lists as many online replicas as the
// group has replicas.
func (g *Group) waitOnline(ctx context.Context, m *Node) error {
	want := len(g.nodes) - 1
	for {
		info, err := m.Admin().Info(ctx, "replication").Result()
		online := 0
		if err == nil {
			for i := range want {
				if strings.Contains(infoField(info, "slave"+strconv.Itoa(i)), "state=online") {
					online++
				}
			}
			if online >= want {
				// Online as the master says, and answering WAIT: a
				// replica that has just synced may not answer GETACK
				// until its first periodic ACK.
				if err = m.Admin().Publish(ctx, "chaos:wait-probe", "").Err(); err == nil {
					var n int64
					if n, err = m.Admin().Do(ctx, "WAIT", want, 50).Int64(); err == nil && n >= int64(want) {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: %d of %d replicas of %s online: %w (last error %v)", online, want, m.name, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// infoField returns one "name:value" field of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// KeysWithoutExpiry lists, as "node: key", the keys under the lock prefix
// ("quorumlock:") that have no TTL on any data node, except the counters
// meant to live forever (fencing and ticket counters): locks that would never
// be free again if their holder died. It asks each node through its admin
// client, each within perNode; a node that does not answer is reported in
// the error and the others are still scanned.
func (c *Cluster) KeysWithoutExpiry(ctx context.Context, perNode time.Duration) ([]string, error) {
	var (
		out  []string
		errs []error
	)
	for _, n := range c.Nodes() {
		nctx, cancel := context.WithTimeout(ctx, perNode)
		keys, err := lockkeys.WithoutExpiry(nctx, n.Admin(), lockkeys.DefaultPrefix)
		cancel()
		for _, k := range keys {
			out = append(out, n.Name()+": "+k)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name(), err))
		}
	}
	return out, errors.Join(errs...)
}
