package localredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoCLI says redis-cli could not be found (StartCluster needs it).
var ErrNoCLI = errors.New("quorumlock: redis-cli not found in PATH; install the Debian package 'redis-tools' (apt-get install redis-tools) or set QUORUMLOCK_REDIS_CLI")

// FindCLI returns the path of redis-cli: $QUORUMLOCK_REDIS_CLI if set, else
// the one on PATH.
func FindCLI() (string, error) { return findBinary("QUORUMLOCK_REDIS_CLI", "redis-cli", ErrNoCLI) }

// Cluster is a Redis Cluster of masters (no replicas) started by
// StartCluster: every server runs with cluster-enabled yes, its own
// nodes.conf in its data directory, a 2 s cluster-node-timeout and a cluster
// bus on a second free port. Its methods are safe for concurrent use.
type Cluster struct {
	// Masters are the servers, in the order redis-cli assigned slot ranges
	// (master i serves the i-th range).
	Masters []*Server

	mu  sync.Mutex
	ids []string // CLUSTER MYID of each master, filled lazily
}

// MinClusterMasters is the smallest cluster redis-cli --cluster create makes.
const MinClusterMasters = 3

// StartCluster starts masters redis-server processes in cluster mode, joins
// them with redis-cli --cluster create (slots split evenly) and returns once
// every node reports cluster_state:ok and agrees on the slot map. cfg applies
// to every server (its Port and Dir must be zero: each server gets its own);
// the cluster directives are added to its Extra. The context bounds the
// start, not the cluster's life: call Stop.
func StartCluster(ctx context.Context, masters int, cfg Config) (*Cluster, error) {
	if masters < MinClusterMasters {
		return nil, fmt.Errorf("quorumlock: a cluster needs at least %d masters (redis-cli --cluster create refuses fewer), got %d", MinClusterMasters, masters)
	}
	if cfg.Port != 0 || cfg.Dir != "" {
		return nil, errors.New("quorumlock: StartCluster picks ports and directories itself; leave Config.Port and Config.Dir empty")
	}
	cli, err := FindCLI()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Masters: make([]*Server, masters)}
	errs := make([]error, masters)
	var wg sync.WaitGroup
	for i := range c.Masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Masters[i], errs[i] = startClusterNode(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		StopAll(c.Masters)
		return nil, err
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("quorumlock: redis-cli --cluster create: %w: %s", err, lastLines(string(out), 5))
	}
	if err := c.WaitOK(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// startClusterNode starts one cluster-mode server. The bus port must be
// free too (the default, port+10000, may be taken or above 65535), so both
// ports are chosen here and the start is retried when one was taken.
func startClusterNode(ctx context.Context, cfg Config) (*Server, error) {
	var lastErr error
	for try := 0; try < 5; try++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		bus, err := FreePort()
		if err != nil {
			return nil, err
		}
		if bus == port {
			continue
		}
		nc := cfg
		nc.Port = port
		nc.Extra = append(append([]string(nil), cfg.Extra...),
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-node-timeout 2000",
			"cluster-port "+strconv.Itoa(bus),
		)
		s, err := Start(ctx, nc)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// StartClusterT starts a cluster for a test and stops it in t.Cleanup.
// Without redis-server or redis-cli the test is skipped, or failed when
// Required().
func StartClusterT(t TB, masters int, cfg Config) *Cluster {
	t.Helper()
	c, err := StartCluster(context.Background(), masters, cfg)
	if err != nil {
		if (errors.Is(err, ErrNotInstalled) || errors.Is(err, ErrNoCLI)) && !Required() {
			t.Skipf("%v", err)
		}
		t.Fatalf("start redis cluster: %v", err)
	}
	t.Cleanup(func() {
		CheckExpiry(t, c.Masters...)
		_ = c.Stop()
	})
	return c
}

// Addrs are the masters' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Masters))
	for i, s := range c.Masters {
		out[i] = s.Addr()
	}
	return out
}

// Options returns go-redis cluster options with the settings a lock needs:
// context deadlines honoured, no hidden retries of a call that may have
// run, one dial attempt. MOVED and ASK redirects are still followed (they
// are answers, not failures).
func (c *Cluster) Options() *redis.ClusterOptions {
	o := &redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           time.Second,
		// Every node client dials once (redis.Options.DialerRetries
		// exists in every go-redis the library accepts).
		NewClient: func(opt *redis.Options) *redis.Client {
			opt.DialerRetries = 1
			opt.DialerRetryTimeout = time.Microsecond // see node.Options
			return redis.NewClient(opt)
		},
	}
	return o
}

// oneDial sets the DialerRetries field of go-redis options to 1 where the
// go-redis in the build has it: redis.Options has it from v9.17 (the
// oldest go-redis the library's go.mod asks for), FailoverOptions from
// v9.18, whose own requirements would add six modules to every user's
// build. Built against v9.17 a failover client keeps go-redis's default
// of 5 dial attempts: slower to report a master that is down, nothing else.
func oneDial(opts any) {
	v := reflect.ValueOf(opts).Elem()
	if f := v.FieldByName("DialerRetries"); f.IsValid() && f.CanSet() {
		f.SetInt(1)
	}
	if f := v.FieldByName("DialerRetryTimeout"); f.IsValid() && f.CanSet() {
		f.SetInt(int64(time.Microsecond))
	}
}

// Client returns a new go-redis cluster client (caller closes it).
func (c *Cluster) Client() *redis.ClusterClient { return redis.NewClusterClient(c.Options()) }

// Stop stops every master. It is safe to call more than once.
func (c *Cluster) Stop() error {
	StopAll(c.Masters)
	return nil
}

// do runs one command on master i with a short-lived direct client.
func (c *Cluster) do(ctx context.Context, i int, args ...any) *redis.Cmd {
	rc := c.Masters[i].Client()
	defer rc.Close()
	return rc.Do(ctx, args...)
}

// WaitOK waits until every running master reports cluster_state:ok and all
// of them agree on which master serves each slot.
func (c *Cluster) WaitOK(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var last string
	for {
		ok, why := c.converged(ctx)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorumlock: cluster %v not ok: %s: %w", c.Addrs(), last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Cluster) converged(ctx context.Context) (bool, string) {
	var first string
	for i, s := range c.Masters {
		if !s.Running() {
			continue
		}
		info, err := c.do(ctx, i, "cluster", "info").Text()
		if err != nil {
			return false, err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return false, s.Addr() + " is not in cluster_state:ok"
		}
		slots, err := c.slotMap(ctx, i)
		if err != nil {
			return false, err.Error()
		}
		if first == "" {
			first = slots
		} else if slots != first {
			return false, "nodes disagree on the slot map"
		}
	}
	return true, ""
}

// slotMap is master i's view of slot ranges → serving address, as text.
func (c *Cluster) slotMap(ctx context.Context, i int) (string, error) {
	rc := c.Masters[i].Client()
	defer rc.Close()
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(slots))
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d-%d@%s", s.Start, s.End, s.Nodes[0].Addr))
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), nil
}

// ID returns CLUSTER MYID of master i.
func (c *Cluster) ID(ctx context.Context, i int) (string, error) {
	c.mu.Lock()
	if c.ids == nil {
		c.ids = make([]string, len(c.Masters))
	}
	id := c.ids[i]
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	id, err := c.do(ctx, i, "cluster", "myid").Text()
	if err != nil {
		return "", fmt.Errorf("quorumlock: CLUSTER MYID on %s: %w", c.Masters[i].Addr(), err)
	}
	c.mu.Lock()
	c.ids[i] = id
	c.mu.Unlock()
	return id, nil
}

// Slot is the hash slot of key (CLUSTER KEYSLOT, asked of the first master).
func (c *Cluster) Slot(ctx context.Context, key string) (int, error) {
	n, err := c.do(ctx, 0, "cluster", "keyslot", key).Int()
	return n, err
}

// SlotOwner returns the index of the master that serves slot, as the first
// master sees it.
func (c *Cluster) SlotOwner(ctx context.Context, slot int) (int, error) {
	rc := c.Masters[0].Client()
	defer rc.Close()
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return -1, err
	}
	for _, s := range slots {
		if slot >= s.Start && slot <= s.End && len(s.Nodes) > 0 {
			for i, m := range c.Masters {
				if sameAddr(m.Addr(), s.Nodes[0].Addr) {
					return i, nil
				}
			}
			return -1, fmt.Errorf("quorumlock: slot %d served by unknown node %s", slot, s.Nodes[0].Addr)
		}
	}
	return -1, fmt.Errorf("quorumlock: slot %d is not served", slot)
}

func sameAddr(a, b string) bool {
	ah, ap, _ := net.SplitHostPort(a)
	bh, bp, _ := net.SplitHostPort(b)
	if ap != bp {
		return false
	}
	loop := func(h string) bool { return h == "" || h == "127.0.0.1" || h == "localhost" || h == "::1" }
	return ah == bh || (loop(ah) && loop(bh))
}

// MoveSlot migrates slot, with its keys, to master to, the way an operator's
// resharding does: the target is marked IMPORTING and the source MIGRATING,
// keys move one at a time with MIGRATE (a key keeps its TTL and is on
// exactly one node at any moment), then every master is told the new owner.
// While keys are in flight clients are redirected with ASK, or get TRYAGAIN
// for a command whose keys are split between the two nodes. If between is
// not nil it runs before each key moves, with the number moved so far, so a
// test can act while the slot is half-moved.
func (c *Cluster) MoveSlot(ctx context.Context, slot, to int, between func(moved int)) error {
	from, err := c.SlotOwner(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	fromID, err := c.ID(ctx, from)
	if err != nil {
		return err
	}
	toID, err := c.ID(ctx, to)
	if err != nil {
		return err
	}
	if err := c.do(ctx, to, "cluster", "setslot", slot, "importing", fromID).Err(); err != nil {
		return fmt.Errorf("quorumlock: SETSLOT IMPORTING: %w", err)
	}
	if err := c.do(ctx, from, "cluster", "setslot", slot, "migrating", toID).Err(); err != nil {
		return fmt.Errorf("quorumlock: SETSLOT MIGRATING: %w", err)
	}
	dst := c.Masters[to]
	moved := 0
	for {
		keys, err := c.do(ctx, from, "cluster", "getkeysinslot", slot, 1).StringSlice()
		if err != nil {
			return fmt.Errorf("quorumlock: GETKEYSINSLOT: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		if between != nil {
			between(moved)
		}
		args := []any{"migrate", "127.0.0.1", dst.Port(), "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := c.do(ctx, from, args...).Err(); err != nil && !errors.Is(err, redis.Nil) && err.Error() != "NOKEY" {
			return fmt.Errorf("quorumlock: MIGRATE: %w", err)
		}
		moved += len(keys)
	}
	// The new owner first, then the old one, then the rest (the order
	// redis-cli uses, so the slot is never left without an owner).
	order := []int{to, from}
	for i := range c.Masters {
		if i != to && i != from {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if !c.Masters[i].Running() {
			continue
		}
		if err := c.do(ctx, i, "cluster", "setslot", slot, "node", toID).Err(); err != nil {
			return fmt.Errorf("quorumlock: SETSLOT NODE on %s: %w", c.Masters[i].Addr(), err)
		}
	}
	return c.WaitOK(ctx)
}
