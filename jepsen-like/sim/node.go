package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"

	"github.com/quorumlock/quorumlock/internal/node"
)

// Node is one simulated Redis server: a miniredis instance (which runs the
// project's Lua scripts with gopher-lua) behind the in-memory network, with
// a clock of its own and the faults a process can suffer: pause, crash and
// restart with or without persistence, clock jumps and rates.
//
// Every command passes a hook first (see hook), which is where the node's
// clock is set, a paused node holds the command, a replica refuses clients'
// writes, a master logs writes for its replica and WAIT is answered.
type Node struct {
	name string
	net  *Net

	mu     sync.Mutex
	m      *miniredis.Miniredis
	down   bool
	paused chan struct{} // non-nil while paused; closed on resume
	// held are the commands waiting for a resume, in arrival order, when
	// the network orders its instants: they run one at a time after it.
	held     []chan struct{}
	restarts int
	// setAt is the clock reading last given to m (SetTime): m counts its
	// TTLs down to it.
	setAt time.Time
	// crashed are the keys the node held when it crashed (what it holds
	// for the RedLock invariant while it is down: it cannot grant).
	crashed map[string]heldKey
	// started is when the current process started (INFO's uptime), runID
	// its run id; both change on every restart.
	started time.Time
	runID   string
	// aof: the node says it persists every write (appendonly yes,
	// appendfsync always) when asked with CONFIG GET.
	aof bool

	// The node's clock: at virtual instant t it reads
	// epoch + base + rate·(t − from) + jump.
	epoch time.Time
	from  time.Time
	base  time.Duration
	rate  float64
	jump  time.Duration

	group *Group // set when the node belongs to a master+replica group
	// pooled: scripts run on a pooled Lua state (lua.go) instead of
	// miniredis's fresh one per script.
	pooled bool
	lua    *luaRunner // m's runner; nil when miniredis runs the scripts
}

// replName is the client name of a group's replication stream, the one
// client a replica accepts writes from.
const replName = "__sim_replication__"

// NewNode starts a node called name on nw.
func NewNode(nw *Net, name string) *Node {
	return newSimNode(nw, name, pooledLua)
}

// newSimNode is NewNode with the choice of Lua runner: pooled (lua.go) or
// miniredis's own.
func newSimNode(nw *Net, name string, pooled bool) *Node {
	now := time.Now()
	n := &Node{name: name, net: nw, epoch: now, from: now, rate: 1, pooled: pooled, started: now, runID: runID(name, 0)}
	n.m = n.fresh()
	nw.add(n)
	return n
}

// Name is the node's address on the network.
func (n *Node) Name() string { return n.name }

// Miniredis is the node's current server (a restart without persistence
// replaces it).
func (n *Node) Miniredis() *miniredis.Miniredis {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m
}

// fresh makes an empty server whose commands pass the node's hook.
func (n *Node) fresh() *miniredis.Miniredis {
	m := miniredis.NewMiniRedis()
	// Dial starts the server without a listener; the probe connection
	// itself is not needed.
	if c, err := m.Dial(); err == nil {
		_ = c.Close()
	}
	m.ClockTTL(true)
	n.setAt = n.clockLocked()
	m.SetTime(n.setAt)
	lr := newLuaRunner(m, n.pooled)
	if lr != nil {
		lr.around = func(run func()) { n.script(lr, run) }
	}
	n.lua = lr
	m.Server().SetPreHook(func(p *server.Peer, cmd string, args ...string) bool {
		return n.hook(m, lr, p, cmd, args)
	})
	return m
}

// clockLocked is the node's current time.
func (n *Node) clockLocked() time.Time {
	el := n.base + time.Duration(n.rate*float64(time.Since(n.from)))
	return n.epoch.Add(el + n.jump)
}

// Clock returns the node's current time.
func (n *Node) Clock() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clockLocked()
}

// SetRate makes the node's clock run at rate (1: true time) from now on.
func (n *Node) SetRate(rate float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	n.base += time.Duration(n.rate * float64(now.Sub(n.from)))
	n.from, n.rate = now, rate
}

// Jump moves the node's clock by d. Forward, every TTL on the node
// shortens by d at its next command (Redis keeps absolute expiry times
// and compares them with its wall clock). Backward jumps are not modelled
// (miniredis keeps TTLs as durations; see the package doc): d < 0 is
// ignored.
func (n *Node) Jump(d time.Duration) {
	if d <= 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.jump += d
}

// Pause freezes the node (SIGSTOP): commands wait, unanswered, and run in
// order once it resumes.
func (n *Node) Pause() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused == nil {
		n.paused = make(chan struct{})
	}
}

// isPaused reports whether the node is paused.
func (n *Node) isPaused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused != nil
}

// Resume ends a pause.
func (n *Node) Resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unpauseLocked()
}

// unpauseLocked ends a pause: the commands it held run, in the order
// they arrived (all at once when the network does not order instants).
func (n *Node) unpauseLocked() {
	if n.paused == nil {
		return
	}
	close(n.paused)
	n.paused = nil
	if len(n.held) > 0 {
		n.net.instants.release(n.held)
		n.held = nil
	}
}

// Crash kills the node (kill -9): every connection drops, dials are
// refused until Restart. With persist, the data survives (AOF with
// appendfsync always: every acknowledged write); without, the node comes
// back empty.
func (n *Node) Crash(persist bool) {
	n.mu.Lock()
	if n.down {
		n.mu.Unlock()
		return
	}
	n.down = true
	n.unpauseLocked()
	old := n.m
	n.crashed = snapshot(old, n.clockLocked().Sub(n.setAt), n.rate)
	if !persist {
		n.m = n.fresh()
	}
	n.mu.Unlock()
	n.net.closeConns(func(c *conn) bool { return c.node == n.name })
	if !persist {
		old.Close()
	}
}

// Restart brings a crashed node back.
func (n *Node) Restart() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		n.down = false
		n.restarts++
		n.crashed = nil
		n.started = time.Now()
		n.runID = runID(n.name, n.restarts)
	}
}

// heldKey is one key's owners and when it expires (true time).
type heldKey struct {
	owners map[string]bool
	until  time.Time
}

// noExpiry is the until of a key without a TTL.
var noExpiry = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// holding reads key of m: its owners (a fast-path string's owner, or a
// hash's fields) and when it expires in true time, m's TTLs being as of
// since ago on a clock running at rate.
func holding(m *miniredis.Miniredis, key string, since time.Duration, rate float64) (heldKey, bool) {
	if !m.Exists(key) {
		return heldKey{}, false
	}
	h := heldKey{owners: map[string]bool{}, until: noExpiry}
	if ttl := m.TTL(key); ttl > 0 {
		left := ttl - since
		if left <= 0 {
			return heldKey{}, false
		}
		h.until = time.Now().Add(time.Duration(float64(left) / rate))
	}
	switch m.Type(key) {
	case "string":
		v, _ := m.Get(key)
		if o, _, ok := node.SplitFastValue(v); ok {
			h.owners[o] = true
		}
	case "hash":
		fs, _ := m.HKeys(key)
		for _, f := range fs {
			h.owners[f] = true
		}
	}
	return h, true
}

// snapshot is every key of m that holding can read.
func snapshot(m *miniredis.Miniredis, since time.Duration, rate float64) map[string]heldKey {
	out := map[string]heldKey{}
	for _, k := range m.Keys() {
		if h, ok := holding(m, k, since, rate); ok {
			out[k] = h
		}
	}
	return out
}

// Holds reports until when (true time) the node keeps key for owner:
// false if it does not hold it. A crashed node holds what it held when
// it crashed, until those keys expire: it grants nothing while it is down.
func (n *Node) Holds(key, owner string) (time.Time, bool) {
	n.mu.Lock()
	if n.down {
		h, ok := n.crashed[key]
		n.mu.Unlock()
		if ok && h.owners[owner] && time.Now().Before(h.until) {
			return h.until, true
		}
		return time.Time{}, false
	}
	m, since, rate := n.m, n.clockLocked().Sub(n.setAt), n.rate
	n.mu.Unlock()
	h, ok := holding(m, key, since, rate)
	if !ok || !h.owners[owner] {
		return time.Time{}, false
	}
	return h.until, true
}

// SetPersistence sets what the node says of its persistence when asked
// (CONFIG GET appendonly appendfsync): aof, appendonly yes with
// appendfsync always; otherwise none. What a crash keeps is the crash
// fault's to say (Crash).
func (n *Node) SetPersistence(aof bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.aof = aof
}

// serverSection reports whether INFO with args includes the server
// section (which miniredis does not have).
func serverSection(args []string) bool {
	if len(args) == 0 {
		return true
	}
	for _, a := range args {
		switch strings.ToLower(a) {
		case "server", "all", "everything", "default":
			return true
		}
	}
	return false
}

// infoServer is the node's INFO server section: the fields restart
// detection reads (run_id changes on every restart, uptime counts from
// the restart).
func (n *Node) infoServer() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	up := int64(time.Since(n.started) / time.Second)
	return "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n" +
		"run_id:" + n.runID + "\r\n" +
		"uptime_in_seconds:" + strconv.FormatInt(up, 10) + "\r\n" +
		"uptime_in_days:" + strconv.FormatInt(up/86400, 10) + "\r\n"
}

// configGet answers CONFIG GET for the persistence settings (every other
// parameter matches nothing).
func (n *Node) configGet(p *server.Peer, patterns []string) {
	n.mu.Lock()
	params := map[string]string{"appendonly": "no", "appendfsync": "everysec", "save": ""}
	if n.aof {
		params["appendonly"], params["appendfsync"] = "yes", "always"
	}
	n.mu.Unlock()
	var keys []string
	for _, k := range []string{"appendonly", "appendfsync", "save"} {
		for _, pat := range patterns {
			if ok, _ := path.Match(strings.ToLower(pat), k); ok {
				keys = append(keys, k)
				break
			}
		}
	}
	p.WriteMapLen(len(keys))
	for _, k := range keys {
		p.WriteBulk(k)
		p.WriteBulk(params[k])
	}
}

// Restarts counts the node's restarts.
func (n *Node) Restarts() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restarts
}

// Started is when the node's current process started.
func (n *Node) Started() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started
}

// runID is a node's run id after its restarts-th restart: 40 hex digits,
// as Redis's, different for every restart.
func runID(name string, restarts int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%d", name, restarts)))
	return hex.EncodeToString(sum[:])
}

// Down reports whether the node is crashed.
func (n *Node) Down() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

// Close stops the node for good.
func (n *Node) Close() {
	n.mu.Lock()
	n.down = true
	n.unpauseLocked()
	m := n.m
	n.mu.Unlock()
	n.net.closeConns(func(c *conn) bool { return c.node == n.name })
	m.Close()
}

// serve hands a new connection to the node's server.
func (n *Node) serve(c net.Conn) error {
	n.mu.Lock()
	if n.down {
		n.mu.Unlock()
		return ErrTaken
	}
	m := n.m
	n.mu.Unlock()
	m.Server().ServeConn(c)
	return nil
}

// hook runs before every command m executes; true means it answered. lr
// is m's Lua runner, nil when miniredis runs the scripts.
func (n *Node) hook(m *miniredis.Miniredis, lr *luaRunner, p *server.Peer, cmd string, args []string) bool {
	if nested(p) {
		// A command a script runs: it belongs to the script's command,
		// which passed here already (and holds the server's lock). A
		// write is one of the script's effects.
		if lr != nil && lr.capturing && isWrite(cmd) {
			lr.fx = append(lr.fx, append([]string{cmd}, args...))
		}
		return false
	}
	if p.ClientName == loaderName {
		// The runner loading an EVAL's script into m's cache, for an EVAL
		// that passed here already.
		return false
	}
	n.mu.Lock()
	for n.paused != nil {
		ch := n.paused
		if n.net.instants != nil {
			ch = make(chan struct{})
			n.held = append(n.held, ch)
		}
		n.mu.Unlock()
		<-ch
		n.mu.Lock()
	}
	if n.down || m != n.m {
		// A command that arrived before a crash: the process is gone.
		n.mu.Unlock()
		p.Close()
		return true
	}
	n.setAt = n.clockLocked()
	m.SetTime(n.setAt)
	g := n.group
	n.mu.Unlock()
	n.net.trace.command(n.name, cmd, args)
	effects := lr != nil && isScript(cmd)
	if g != nil && g.hook(n, p, cmd, args, effects) {
		return true
	}
	switch strings.ToUpper(cmd) {
	case "INFO":
		if serverSection(args) {
			p.WriteBulk(n.infoServer())
			return true
		}
	case "CONFIG":
		if len(args) >= 2 && strings.EqualFold(args[0], "GET") {
			n.configGet(p, args[1:])
			return true
		}
	}
	if lr == nil {
		return false
	}
	if lr.hook(p, cmd, args) {
		return true
	}
	if effects && g != nil {
		// miniredis runs this script itself, where its effects cannot be
		// told from other writes: the replica runs the script.
		g.logWrite(n, cmd, args)
	}
	return false
}

// isScript: the commands that run a script, whose effects a group
// replicates when the node's runner runs it.
func isScript(cmd string) bool {
	switch strings.ToUpper(cmd) {
	case "EVAL", "EVALSHA", "FCALL", "FCALL_RO":
		return true
	}
	return false
}

// script runs a client's script (run) on m's runner lr, m locked. On
// a group's master it keeps the script's writes and hands them to the group
// as one entry, as Redis 7 replicates a script: its effects in a MULTI, not
// the script. A replica that ran the script again could come to another
// answer (a key that expired there meanwhile, TIME, a backlog applied late)
// and hold what the master does not, while WAIT counts the entry as
// acknowledged. A script that wrote nothing sends nothing.
func (n *Node) script(lr *luaRunner, run func()) {
	g := n.group
	if g == nil || g.Master() != n {
		run()
		return
	}
	lr.capturing, lr.fx = true, nil
	run()
	fx := lr.fx
	lr.capturing, lr.fx = false, nil
	if len(fx) > 0 {
		g.logEffects(n, fx)
	}
}

// readOnly are commands a replica serves and a master does not log. Every
// other command is replicated: as it is, or for a script the runner runs,
// the writes it made (Node.script); a script miniredis runs itself
// (SIM_LUA=miniredis, or queued in MULTI) is replayed on the replica.
var readOnly = map[string]bool{
	"PING": true, "HELLO": true, "CLIENT": true, "INFO": true, "TIME": true, "ECHO": true,
	"SELECT": true, "COMMAND": true, "QUIT": true, "CONFIG": true, "DBSIZE": true, "WAIT": true,
	"SUBSCRIBE": true, "UNSUBSCRIBE": true, "PSUBSCRIBE": true, "PUNSUBSCRIBE": true, "PUBLISH": true,
	"GET": true, "MGET": true, "HGET": true, "HMGET": true, "HGETALL": true, "HEXISTS": true, "HLEN": true,
	"PTTL": true, "TTL": true, "EXISTS": true, "TYPE": true, "SCAN": true, "KEYS": true,
	"ZSCORE": true, "ZRANGE": true, "ZRANGEBYSCORE": true, "ZCARD": true,
	"MULTI": true, "EXEC": true, "DISCARD": true,
}

func isWrite(cmd string) bool { return !readOnly[strings.ToUpper(cmd)] }

// nested reports whether p is the peer miniredis makes for a command run
// from a Lua script (its connection context says so; the field is not
// exported, so it is read by reflection, its index looked up once per type:
// this runs for every command).
func nested(p *server.Peer) bool {
	if p.Ctx == nil {
		return false
	}
	v := reflect.ValueOf(p.Ctx)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	i, ok := nestedField.Load(v.Type())
	if !ok {
		idx := -1
		if f, found := v.Type().FieldByName("nested"); found && len(f.Index) == 1 && f.Type.Kind() == reflect.Bool {
			idx = f.Index[0]
		}
		i, _ = nestedField.LoadOrStore(v.Type(), idx)
	}
	return i.(int) >= 0 && v.Field(i.(int)).Bool()
}

// nestedField maps a connection context's type to the index of its bool
// field "nested", -1 when it has none.
var nestedField sync.Map
