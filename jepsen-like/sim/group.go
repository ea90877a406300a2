package sim

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/proto"
	"github.com/alicebob/miniredis/v2/server"
)

// Group is a master + replica pair with asynchronous replication: the
// master logs every write (of a script, the writes it made: Node.script),
// and a replication stream applies the log on the replica Lag later, in
// order. Cutting the link stops the stream (the
// log waits, as Redis's backlog does); a failover promotes the replica
// with whatever it has applied, losing the rest. Clients that follow the
// group dial its name (an alias of the current master).
type Group struct {
	name string
	net  *Net
	// Lag is how long a write takes to reach the replica.
	Lag time.Duration

	mu       sync.Mutex
	master   *Node
	replica  *Node // nil between a Failover and a Rejoin
	nodes    [2]*Node
	cut      bool
	log      []entry
	sent     int64         // writes logged
	acked    int64         // writes applied on the replica
	progress chan struct{} // closed and replaced when acked grows
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// entry is one replicated write: a command (args), or a script's
// effects (fx), applied in one MULTI.
type entry struct {
	at   time.Time
	made time.Time // when the master wrote it
	args []string
	fx   [][]string
}

// NewGroup makes a group of two new nodes, name+"-a" (the master) and
// name+"-b" (its replica), reachable as name.
func NewGroup(nw *Net, name string, lag time.Duration) *Group {
	g := &Group{name: name, net: nw, Lag: lag,
		progress: make(chan struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	g.master = NewNode(nw, name+"-a")
	g.replica = NewNode(nw, name+"-b")
	g.master.group, g.replica.group = g, g
	g.nodes = [2]*Node{g.master, g.replica}
	nw.Alias(name, func() string { return g.Master().name })
	go g.stream()
	return g
}

// Name is the group's address (its current master).
func (g *Group) Name() string { return g.name }

// Master is the node clients following the group talk to.
func (g *Group) Master() *Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.master
}

// Replica is the current replica.
func (g *Group) Replica() *Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.replica
}

// Nodes are both nodes, the first master first.
func (g *Group) Nodes() []*Node {
	return g.nodes[:]
}

// Cut stops replication (the link between master and replica is
// partitioned); Heal resumes it from the backlog.
func (g *Group) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = true
}

// Heal resumes replication.
func (g *Group) Heal() {
	g.mu.Lock()
	g.cut = false
	g.mu.Unlock()
	g.poke()
}

// Failover cuts the link and promotes the replica: it becomes the master
// of every client that follows the group (their connections to the old
// master drop, as a Sentinel-aware client reconnects), with only the writes
// it had applied. The old master keeps running as a master for clients that
// have its own address, until Rejoin. It returns the old master.
func (g *Group) Failover() *Node {
	g.mu.Lock()
	old := g.master
	g.cut = true
	g.master, g.replica = g.replica, nil
	g.log = nil
	g.mu.Unlock()
	g.net.closeConns(func(c *conn) bool { return c.via == g.name && c.node == old.name })
	return old
}

// Rejoin makes old (a master Failover left behind) the replica of the new
// master: a full resynchronisation replaces its data with the master's, and
// replication resumes. Clients that still have its address now get
// READONLY errors for writes.
func (g *Group) Rejoin(old *Node) {
	g.mu.Lock()
	if g.replica != nil {
		g.mu.Unlock()
		return
	}
	master := g.master
	g.replica = old
	g.log = nil
	g.cut = false
	g.acked = g.sent
	g.mu.Unlock()
	copyData(master.Miniredis(), old.Miniredis())
	g.net.closeConns(func(c *conn) bool { return c.node == old.name && c.client != replName })
	g.poke()
}

// logWrite logs a command master n runs for the replica.
// A key the command writes that the master no longer has (expired, or
// never there) is deleted on the replica first, as a Redis master sends a
// DEL when it finds a key expired: the simulated replica expires keys on
// its own clock, and a SET NX the master granted must not fail there on
// the last holder's key.
func (g *Group) logWrite(n *Node, cmd string, args []string) {
	if k, ok := plainKey(cmd, args); ok && !n.Miniredis().Exists(k) {
		g.add(n, entry{args: []string{"DEL", k}})
	}
	g.add(n, entry{args: append([]string{cmd}, args...)})
}

// plainKey is the key a plain (not script) write command names first.
func plainKey(cmd string, args []string) (string, bool) {
	switch strings.ToUpper(cmd) {
	case "SET", "PEXPIRE", "EXPIRE", "INCR", "INCRBY", "HSET", "HINCRBY":
		if len(args) > 0 {
			return args[0], true
		}
	}
	return "", false
}

// logEffects logs the writes of a script master n ran, as one entry.
func (g *Group) logEffects(n *Node, fx [][]string) {
	g.add(n, entry{fx: fx})
}

// add logs e if n is still the master (a failover since the write lost
// it, as a write the replica never got).
func (g *Group) add(n *Node, e entry) {
	g.mu.Lock()
	if g.master != n {
		g.mu.Unlock()
		return
	}
	e.made = time.Now()
	e.at = e.made.Add(g.Lag)
	g.log = append(g.log, e)
	g.sent++
	g.mu.Unlock()
	g.poke()
}

func (g *Group) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Close stops the replication stream and both nodes.
func (g *Group) Close() {
	close(g.stop)
	<-g.done
	for _, n := range g.Nodes() {
		n.Close()
	}
}

// hook is the group's part of node n's command hook. effects: cmd is a
// script whose effects the master's runner hands over (Node.script), so the
// master does not log the command.
func (g *Group) hook(n *Node, p *server.Peer, cmd string, args []string, effects bool) bool {
	g.mu.Lock()
	isMaster := g.master == n
	isReplica := g.replica == n
	if cmd == "WAIT" {
		g.mu.Unlock()
		g.wait(isMaster, p, args)
		return true
	}
	if !isWrite(cmd) {
		g.mu.Unlock()
		return false
	}
	switch {
	case isMaster && effects:
		g.mu.Unlock()
		return false
	case isMaster:
		g.mu.Unlock()
		g.logWrite(n, cmd, args)
		return false
	case isReplica && p.ClientName != replName && !(cmd == "CLIENT"):
		g.mu.Unlock()
		p.WriteError("READONLY You can't write against a read only replica.")
		return true
	}
	g.mu.Unlock()
	return false
}

// wait answers WAIT numreplicas timeout: how many replicas (0 or 1) have
// applied every write logged so far, waiting up to timeout for it.
func (g *Group) wait(isMaster bool, p *server.Peer, args []string) {
	if len(args) != 2 {
		p.WriteError("ERR wrong number of arguments for 'wait' command")
		return
	}
	want, err1 := strconv.Atoi(args[0])
	ms, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || ms < 0 {
		p.WriteError("ERR value is not an integer or out of range")
		return
	}
	var timeout <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	g.mu.Lock()
	target := g.sent
	for {
		ok := isMaster && g.master != nil && g.replica != nil && g.acked >= target
		if ok || want <= 0 {
			n := 0
			if ok {
				n = 1
			}
			g.mu.Unlock()
			p.WriteInt(n)
			return
		}
		ch := g.progress
		g.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			p.WriteInt(0)
			return
		case <-g.stop:
			p.WriteInt(0)
			return
		}
		g.mu.Lock()
	}
}

// stream is the replication stream: it applies the log on the replica.
func (g *Group) stream() {
	defer close(g.done)
	var (
		cl     *proto.Client
		target *Node
	)
	defer func() {
		if cl != nil {
			_ = cl.Close()
		}
	}()
	for {
		g.mu.Lock()
		var next *entry
		if !g.cut && g.replica != nil && len(g.log) > 0 {
			next = &g.log[0]
		}
		rep := g.replica
		g.mu.Unlock()
		if next == nil {
			select {
			case <-g.wake:
				continue
			case <-g.stop:
				return
			}
		}
		if d := time.Until(next.at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-g.wake:
			case <-g.stop:
				t.Stop()
				return
			}
			t.Stop()
			continue
		}
		if target != rep || cl == nil {
			if cl != nil {
				_ = cl.Close()
			}
			cl = nil
			c, err := g.net.Dial(context.Background(), replName, rep.name)
			if err != nil {
				// The replica is down: try again later.
				t := time.NewTimer(10 * time.Millisecond)
				select {
				case <-t.C:
				case <-g.stop:
					t.Stop()
					return
				}
				continue
			}
			cl, target = proto.NewClient(c), rep
			if _, err := cl.Do("CLIENT", "SETNAME", replName); err != nil {
				_ = cl.Close()
				cl = nil
				continue
			}
		}
		if err := apply(cl, next); err != nil {
			// Only I/O fails here (Redis errors are replies): reconnect.
			_ = cl.Close()
			cl = nil
			continue
		}
		g.mu.Lock()
		if len(g.log) > 0 && g.replica == rep {
			g.log = g.log[1:]
			g.acked++
			close(g.progress)
			g.progress = make(chan struct{})
		}
		g.mu.Unlock()
	}
}

// apply runs e on the replica: its command, or its script's effects in
// one MULTI (all or none of them, should the link drop). A relative
// expiry is shortened by the time since the master wrote it, as Redis 7
// propagates expiries as absolute times (PEXPIREAT, SET PXAT): the key
// expires on the replica when it does on the master, not a replication
// delay later. (Not SET PXAT itself: miniredis reads its clock for it
// outside its lock.)
func apply(cl *proto.Client, e *entry) error {
	if e.fx == nil {
		_, err := cl.Do(e.args...)
		return err
	}
	age := time.Since(e.made)
	if _, err := cl.Do("MULTI"); err != nil {
		return err
	}
	for _, c := range e.fx {
		if _, err := cl.Do(aged(c, age)...); err != nil {
			return err
		}
	}
	_, err := cl.Do("EXEC")
	return err
}

// aged rewrites command c's relative expiry (PEXPIRE, EXPIRE, SET PX or
// EX) for a write made age ago: age less of it, in milliseconds. PEXPIRE
// of 0 or less deletes the key, as a PEXPIREAT in the past does; SET gets
// at least 1 ms (it refuses 0).
func aged(c []string, age time.Duration) []string {
	left := func(v string, unit time.Duration) (int64, bool) {
		d, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		return (time.Duration(d)*unit - age).Milliseconds(), true
	}
	switch strings.ToUpper(c[0]) {
	case "PEXPIRE", "EXPIRE":
		unit := time.Millisecond
		if strings.EqualFold(c[0], "EXPIRE") {
			unit = time.Second
		}
		if len(c) == 3 {
			if ms, ok := left(c[2], unit); ok {
				return []string{"PEXPIRE", c[1], strconv.FormatInt(ms, 10)}
			}
		}
	case "SET":
		for i := 3; i+1 < len(c); i++ {
			unit := time.Millisecond
			switch strings.ToUpper(c[i]) {
			case "EX":
				unit = time.Second
			case "PX":
			default:
				continue
			}
			if ms, ok := left(c[i+1], unit); ok {
				out := slices.Clone(c)
				out[i], out[i+1] = "PX", strconv.FormatInt(max(ms, 1), 10)
				return out
			}
		}
	}
	return c
}

// copyData replaces dst's data with src's (a full resynchronisation): the
// key types the lock scripts use (strings, hashes, sorted sets) with their
// TTLs.
func copyData(src, dst *miniredis.Miniredis) {
	dst.FlushAll()
	for _, k := range src.Keys() {
		switch src.Type(k) {
		case "string":
			if v, err := src.Get(k); err == nil {
				_ = dst.Set(k, v)
			}
		case "hash":
			fs, _ := src.HKeys(k)
			for _, f := range fs {
				dst.HSet(k, f, src.HGet(k, f))
			}
		case "zset":
			ms, _ := src.ZMembers(k)
			for _, m := range ms {
				s, _ := src.ZScore(k, m)
				_, _ = dst.ZAdd(k, s, m)
			}
		}
		if ttl := src.TTL(k); ttl > 0 {
			dst.SetTTL(k, ttl)
		}
	}
}
