package localredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoSentinel says redis-sentinel could not be found.
var ErrNoSentinel = errors.New("quorumlock: redis-sentinel not found in PATH; install the Debian package 'redis-sentinel' (apt-get install redis-sentinel) or set QUORUMLOCK_REDIS_SENTINEL")

// FindSentinel returns the path of redis-sentinel: $QUORUMLOCK_REDIS_SENTINEL
// if set, else the one on PATH.
func FindSentinel() (string, error) {
	return findBinary("QUORUMLOCK_REDIS_SENTINEL", "redis-sentinel", ErrNoSentinel)
}

// SentinelConfig describes a Sentinel deployment: Groups master+replica
// sets, every one watched by each of Sentinels redis-sentinel processes.
type SentinelConfig struct {
	// Groups is the number of master+replica groups; 0 means 1. Each is an
	// independent deployment (one quorum node).
	Groups int
	// Replicas per group; 0 means 1.
	Replicas int
	// Sentinels is the number of redis-sentinel processes; 0 means 3. A
	// failover needs a majority of them.
	Sentinels int
	// DownAfter is down-after-milliseconds: how long a master must not
	// answer before a sentinel considers it down; 0 means 500 ms.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout; 0 means 2 s.
	FailoverTimeout time.Duration
	// Server configures masters and replicas; its ReplicaOf, Port and Dir
	// must be empty.
	Server Config
}

// Sentinel is a running Sentinel deployment started by StartSentinel.
type Sentinel struct {
	Groups    []*Group
	Sentinels []*Server
	// Quorum is the number of sentinels that must agree a master is down.
	Quorum int
}

// Group is one master+replica set under a master name.
type Group struct {
	// Name is the master name the sentinels monitor ("g0", "g1", ...).
	Name string
	// Servers are the group's servers; Servers[0] started as the master.
	// After a failover another one is master: ask Sentinel.Master.
	Servers []*Server
}

// StartSentinel starts the groups (masters first, then replicas, waiting
// until each replica is in sync) and then the sentinels, and returns once
// every sentinel knows every group's replicas and the other sentinels, so a
// failover can start at once. The context bounds the start, not the
// deployment's life: call Stop.
func StartSentinel(ctx context.Context, cfg SentinelConfig) (_ *Sentinel, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	bin, err := FindSentinel()
	if err != nil {
		return nil, err
	}
	d := &Sentinel{Quorum: cfg.Sentinels/2 + 1}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	if err := d.startGroups(ctx, cfg); err != nil {
		return nil, err
	}
	if err := d.startSentinels(ctx, bin, cfg); err != nil {
		return nil, err
	}
	if err := d.waitKnown(ctx, cfg.Replicas); err != nil {
		return nil, err
	}
	return d, nil
}

// withDefaults fills cfg's zero fields with their defaults and refuses
// what StartSentinel cannot honour.
func (cfg SentinelConfig) withDefaults() (SentinelConfig, error) {
	if cfg.Groups == 0 {
		cfg.Groups = 1
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Sentinels == 0 {
		cfg.Sentinels = 3
	}
	if cfg.DownAfter == 0 {
		cfg.DownAfter = 500 * time.Millisecond
	}
	if cfg.FailoverTimeout == 0 {
		cfg.FailoverTimeout = 2 * time.Second
	}
	if cfg.Groups < 0 || cfg.Replicas < 0 || cfg.Sentinels < 0 {
		return cfg, errors.New("quorumlock: negative SentinelConfig count")
	}
	if cfg.Server.ReplicaOf != "" || cfg.Server.Port != 0 || cfg.Server.Dir != "" {
		return cfg, errors.New("quorumlock: StartSentinel sets ReplicaOf, Port and Dir itself; leave them empty in SentinelConfig.Server")
	}
	return cfg, nil
}

// startGroups starts each group's master, then its replicas (groups in
// parallel), and waits until every replica is in sync. What it started is
// in d.Groups, for Stop, even when it fails.
func (d *Sentinel) startGroups(ctx context.Context, cfg SentinelConfig) error {
	masters, err := StartN(ctx, cfg.Groups, cfg.Server)
	if err != nil {
		return err
	}
	for i, m := range masters {
		d.Groups = append(d.Groups, &Group{Name: "g" + strconv.Itoa(i), Servers: []*Server{m}})
	}
	errs := make([]error, cfg.Groups)
	var wg sync.WaitGroup
	for gi, g := range d.Groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rcfg := cfg.Server
			rcfg.ReplicaOf = g.Servers[0].Addr()
			reps, err := StartN(ctx, cfg.Replicas, rcfg)
			if err != nil {
				errs[gi] = err
				return
			}
			g.Servers = append(g.Servers, reps...)
			for _, r := range reps {
				if err := waitInSync(ctx, r); err != nil {
					errs[gi] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sentinelConf is the configuration every sentinel starts from: one
// monitored master per group.
func (d *Sentinel) sentinelConf(cfg SentinelConfig) string {
	var conf strings.Builder
	for _, g := range d.Groups {
		ms := g.Name
		fmt.Fprintf(&conf, "sentinel monitor %s 127.0.0.1 %d %d\n", ms, g.Servers[0].Port(), d.Quorum)
		fmt.Fprintf(&conf, "sentinel down-after-milliseconds %s %d\n", ms, cfg.DownAfter.Milliseconds())
		fmt.Fprintf(&conf, "sentinel failover-timeout %s %d\n", ms, cfg.FailoverTimeout.Milliseconds())
		fmt.Fprintf(&conf, "sentinel parallel-syncs %s 1\n", ms)
	}
	return conf.String()
}

// startSentinels starts cfg.Sentinels sentinel processes (in parallel),
// each with its own copy of the configuration in its own directory, since
// a sentinel rewrites its file.
func (d *Sentinel) startSentinels(ctx context.Context, bin string, cfg SentinelConfig) error {
	conf := d.sentinelConf(cfg)
	d.Sentinels = make([]*Server, cfg.Sentinels)
	errs := make([]error, cfg.Sentinels)
	var wg sync.WaitGroup
	for i := range d.Sentinels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.Sentinels[i], errs[i] = startSentinel(ctx, bin, conf)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("quorumlock: start sentinels: %w", err)
	}
	return nil
}

// startSentinel starts one sentinel from conf in a new directory, which
// its Stop removes.
func startSentinel(ctx context.Context, bin, conf string) (*Server, error) {
	dir, err := os.MkdirTemp("", "quorumlock-sentinel-*")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s, err := Start(ctx, Config{Bin: bin, ConfigFile: file, Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.tempDir = true
	return s, nil
}

// waitInSync waits until replica r reports master_link_status:up.
func waitInSync(ctx context.Context, r *Server) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc := r.Client()
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("quorumlock: replica %s not in sync: %w", r.Addr(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitKnown waits until every sentinel lists every group's replicas and the
// other sentinels (they find each other through hello messages every 2 s).
func (d *Sentinel) waitKnown(ctx context.Context, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, s := range d.Sentinels {
		sc := sentinelClient(s.Addr())
		for _, g := range d.Groups {
			for {
				reps, err1 := sc.Replicas(ctx, g.Name).Result()
				peers, err2 := sc.Sentinels(ctx, g.Name).Result()
				if err1 == nil && err2 == nil && len(reps) >= replicas && len(peers) >= len(d.Sentinels)-1 {
					break
				}
				select {
				case <-ctx.Done():
					sc.Close()
					return fmt.Errorf("quorumlock: sentinel %s does not know all of %s (replicas %d/%d, other sentinels %d/%d): %w",
						s.Addr(), g.Name, len(reps), replicas, len(peers), len(d.Sentinels)-1, ctx.Err())
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
		sc.Close()
	}
	return nil
}

func sentinelClient(addr string) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1, DialerRetryTimeout: time.Microsecond})
}

// StartSentinelT starts a Sentinel deployment for a test and stops it in
// t.Cleanup. Without redis-server or redis-sentinel the test is skipped, or
// failed when Required().
func StartSentinelT(t TB, cfg SentinelConfig) *Sentinel {
	t.Helper()
	d, err := StartSentinel(context.Background(), cfg)
	if err != nil {
		if (errors.Is(err, ErrNotInstalled) || errors.Is(err, ErrNoSentinel)) && !Required() {
			t.Skipf("%v", err)
		}
		t.Fatalf("start sentinel deployment: %v", err)
	}
	t.Cleanup(func() {
		for _, g := range d.Groups {
			CheckExpiry(t, g.Servers...)
		}
		_ = d.Stop()
	})
	return d
}

// Addrs are the sentinels' addresses.
func (d *Sentinel) Addrs() []string {
	out := make([]string, 0, len(d.Sentinels))
	for _, s := range d.Sentinels {
		if s != nil {
			out = append(out, s.Addr())
		}
	}
	return out
}

// FailoverOptions returns options for a sentinel-aware client of group gi
// (redis.NewFailoverClient) with the settings a lock needs: context
// deadlines honoured, no hidden retries, one dial attempt.
func (d *Sentinel) FailoverOptions(gi int) *redis.FailoverOptions {
	o := &redis.FailoverOptions{
		MasterName:            d.Groups[gi].Name,
		SentinelAddrs:         d.Addrs(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           time.Second,
	}
	oneDial(o)
	return o
}

// Client returns a new sentinel-aware client of group gi: it asks the
// sentinels for the master and follows failovers (caller closes it).
func (d *Sentinel) Client(gi int) *redis.Client {
	return redis.NewFailoverClient(d.FailoverOptions(gi))
}

// Master returns the server that a majority of the sentinels name as group
// gi's master.
func (d *Sentinel) Master(ctx context.Context, gi int) (*Server, error) {
	g := d.Groups[gi]
	votes := map[string]int{}
	for _, addr := range d.Addrs() {
		sc := sentinelClient(addr)
		a, err := sc.GetMasterAddrByName(ctx, g.Name).Result()
		sc.Close()
		if err == nil && len(a) == 2 {
			votes[net.JoinHostPort(a[0], a[1])]++
		}
	}
	for addr, n := range votes {
		if n >= d.Quorum {
			for _, s := range g.Servers {
				if sameAddr(s.Addr(), addr) {
					return s, nil
				}
			}
			return nil, fmt.Errorf("quorumlock: sentinels name %s as master of %s, not one of its servers", addr, g.Name)
		}
	}
	return nil, fmt.Errorf("quorumlock: no majority of sentinels agrees on the master of %s (%v)", g.Name, votes)
}

// WaitFailover waits until a majority of the sentinels name a master of
// group gi other than old, and that server answers ROLE as a master.
func (d *Sentinel) WaitFailover(ctx context.Context, gi int, old *Server) (*Server, error) {
	for {
		m, err := d.Master(ctx, gi)
		if err == nil && m != old {
			rc := m.Client()
			role, rerr := rc.Do(ctx, "role").Slice()
			rc.Close()
			if rerr == nil && len(role) > 0 && role[0] == "master" {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("quorumlock: no failover of %s away from %s: %w", d.Groups[gi].Name, old.Addr(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the sentinels, then every group's servers. It is safe to call
// more than once.
func (d *Sentinel) Stop() error {
	StopAll(d.Sentinels)
	for _, g := range d.Groups {
		StopAll(g.Servers)
	}
	return nil
}
