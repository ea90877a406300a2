package chaos

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// CutLink silently partitions a group's current master from its replicas
// and sentinels (a black hole on the master's peer proxy); clients still
// reach it. Writes acknowledged by the master meanwhile do not reach the
// replicas until Recover.
type CutLink struct {
	Group *Group
	cut   *Partition
}

func (f *CutLink) String() string { return "cut-link(" + f.Group.Name() + ")" }

// Inject cuts the link.
func (f *CutLink) Inject(ctx context.Context) error {
	if f.cut != nil {
		return fmt.Errorf("chaos: %v injected twice", f)
	}
	cut := &Partition{Proxy: f.Group.Master().peer}
	if err := cut.Inject(ctx); err != nil {
		return err
	}
	f.cut = cut
	return nil
}

// Recover heals the link; the replicas resynchronise.
func (f *CutLink) Recover(ctx context.Context) error {
	if f.cut == nil {
		return nil
	}
	err := f.cut.Recover(ctx)
	f.cut = nil
	return err
}

// Promote is a manual failover: it cuts the current master off from its
// replicas (CutLink) and promotes the first replica with REPLICAOF NO ONE.
// Clients that still reach the old master keep writing there: a split brain,
// the classic way a single-master lock is granted twice. Recover heals the
// link and makes the old master a replica of the new one, which throws away
// whatever it accepted since the cut. Do not use it on a group that
// sentinels watch (they would fight it): use SentinelFailover.
//
// KeepLink promotes without cutting anything: for a link already cut by a
// CutLink (the "acknowledged but not yet replicated" window), or a master
// that is down.
type Promote struct {
	Group    *Group
	KeepLink bool
	old      *Node
	cut      *Partition
	on       bool
}

func (f *Promote) String() string { return "promote(" + f.Group.Name() + ")" }

// Inject cuts the link and promotes a replica.
func (f *Promote) Inject(ctx context.Context) error {
	if f.on {
		return fmt.Errorf("chaos: %v injected twice", f)
	}
	g := f.Group
	old := g.Master()
	reps := g.Replicas()
	if len(reps) == 0 {
		return fmt.Errorf("chaos: group %s has no replica to promote", g.name)
	}
	var cut *Partition
	if !f.KeepLink {
		cut = &Partition{Proxy: old.peer}
		if err := cut.Inject(ctx); err != nil {
			return err
		}
	}
	f.old, f.cut, f.on = old, cut, true
	nm := reps[0]
	if err := nm.Admin().Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("chaos: promote %s: %w", nm.name, err)
	}
	g.setMaster(nm)
	for _, r := range reps[1:] {
		if err := replicaOf(ctx, r, nm); err != nil {
			return err
		}
	}
	return nil
}

// Recover heals the link and demotes the old master.
func (f *Promote) Recover(ctx context.Context) error {
	if !f.on {
		return nil
	}
	cut, old := f.cut, f.old
	f.cut, f.old, f.on = nil, nil, false
	return healAndDemote(ctx, f.Group, cut, old)
}

// healAndDemote heals the cut around old (if any) and makes it a replica of
// the group's current master, then waits for the replicas to be in sync.
func healAndDemote(ctx context.Context, g *Group, cut *Partition, old *Node) error {
	if cut != nil {
		if err := cut.Recover(ctx); err != nil {
			return err
		}
	}
	if m := g.Master(); m != old {
		if err := replicaOf(ctx, old, m); err != nil {
			return err
		}
	}
	return g.WaitReplicated(ctx)
}

func replicaOf(ctx context.Context, n, master *Node) error {
	host, port, err := net.SplitHostPort(master.PeerAddr())
	if err != nil {
		return err
	}
	if err := n.Admin().Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("chaos: REPLICAOF on %s: %w", n.name, err)
	}
	return nil
}

// SentinelFailover lets the group's sentinels fail it over by themselves: it
// cuts the master off from its replicas and sentinels (CutLink), then waits
// until every sentinel names a new master that answers ROLE as master.
// Clients that still reach the old master keep writing there (split
// brain). Recover heals the link and demotes the old master at once (sentinel
// would do the same by itself some seconds later), then waits for the
// replicas to be in sync.
type SentinelFailover struct {
	Group *Group
	old   *Node
	cut   *Partition
}

func (f *SentinelFailover) String() string { return "sentinel-failover(" + f.Group.Name() + ")" }

// Inject isolates the master and waits for the sentinels' failover.
func (f *SentinelFailover) Inject(ctx context.Context) error {
	g := f.Group
	if len(g.sentinels) == 0 {
		return fmt.Errorf("chaos: group %s has no sentinels (Topology.Sentinels)", g.name)
	}
	if f.cut != nil {
		return fmt.Errorf("chaos: %v injected twice", f)
	}
	old := g.Master()
	cut := &Partition{Proxy: old.peer}
	if err := cut.Inject(ctx); err != nil {
		return err
	}
	f.old, f.cut = old, cut
	for {
		// Every sentinel, not a majority: a client asks whichever answers
		// first, and one that still names the old master sends it there
		// (TestFailoverGrantsLockTwice/sentinel saw B refused by A's lock
		// on the old master).
		if nm, ok := g.sentinelsName(ctx, len(g.sentinels)); ok && nm != old {
			if role, err := nm.Role(ctx); err == nil && role == "master" {
				g.setMaster(nm)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: sentinels of %s did not fail over: %w", g.name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Recover heals the link and demotes the old master.
func (f *SentinelFailover) Recover(ctx context.Context) error {
	if f.cut == nil {
		return nil
	}
	cut, old := f.cut, f.old
	f.cut, f.old = nil, nil
	return healAndDemote(ctx, f.Group, cut, old)
}

func (g *Group) sentinelClient(addr string) *redis.SentinelClient {
	o := localredis.ClientOptions(addr)
	return redis.NewSentinelClient(o)
}

// sentinelsAgree returns the node that a majority of the group's sentinels
// name as master.
func (g *Group) sentinelsAgree(ctx context.Context) (*Node, bool) {
	return g.sentinelsName(ctx, len(g.sentinels)/2+1)
}

// sentinelsName returns the node that at least need of the group's
// sentinels name as master.
func (g *Group) sentinelsName(ctx context.Context, need int) (*Node, bool) {
	votes := map[*Node]int{}
	for _, addr := range g.sentinels {
		sc := g.sentinelClient(addr)
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		hp, err := sc.GetMasterAddrByName(cctx, g.name).Result()
		cancel()
		_ = sc.Close()
		if err != nil || len(hp) != 2 {
			continue
		}
		if n := g.nodeByPeer(net.JoinHostPort(hp[0], hp[1])); n != nil {
			votes[n]++
		}
	}
	for n, v := range votes {
		if v >= need {
			return n, true
		}
	}
	return nil, false
}

func (g *Group) nodeByPeer(addr string) *Node {
	for _, n := range g.nodes {
		if n.peerAddr == addr {
			return n
		}
	}
	return nil
}

// waitSentinelsReady waits until every sentinel sees the master up, knows
// its replicas and the other sentinels.
func (g *Group) waitSentinelsReady(ctx context.Context, replicas int) error {
	for _, addr := range g.sentinels {
		sc := g.sentinelClient(addr)
		var last error
		for {
			m, err := sc.Master(ctx, g.name).Result()
			if err == nil {
				ns, _ := strconv.Atoi(m["num-slaves"])
				no, _ := strconv.Atoi(m["num-other-sentinels"])
				if m["flags"] == "master" && ns >= replicas && no >= len(g.sentinels)-1 {
					break
				}
				err = fmt.Errorf("flags=%s num-slaves=%d num-other-sentinels=%d", m["flags"], ns, no)
			}
			last = err
			select {
			case <-ctx.Done():
				_ = sc.Close()
				return fmt.Errorf("chaos: sentinel %s of %s not ready: %w (%v)", addr, g.name, ctx.Err(), last)
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = sc.Close()
	}
	return nil
}
