package sim

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTaken is the dial error of a node that is down (crashed, not yet
// restarted): the in-memory form of "connection refused".
var ErrTaken = errors.New("sim: connection refused")

// Link is the state of the network between one client and one node: what
// happens to the bytes each way. The zero value is a perfect link.
type Link struct {
	// CutRequests drops everything the client sends (a partition towards
	// the node); CutReplies drops everything the node answers (reply
	// loss). Both: a full partition. Bytes dropped on a connection break it
	// for good, as a TCP stream with a hole in it would be: later bytes on
	// it are dropped too, and the client times out and redials.
	CutRequests, CutReplies bool
	// Delay is added to every message each way, plus up to Jitter drawn
	// from the network's seeded generator, on top of the link's base delay
	// and jitter (NewNet). Messages of one connection keep
	// their order (TCP); messages of different connections may overtake
	// each other.
	Delay, Jitter time.Duration
	// DropUnlocks drops the node's pub/sub messages (unlock
	// notifications) to the client without breaking the connection, as
	// pub/sub's at-most-once delivery loses them; UnlockDelay delays each
	// by that much more.
	DropUnlocks bool
	UnlockDelay time.Duration
}

// Net is the in-memory network of one simulation: clients dial nodes by
// name through Dialer, and faults change the links. Safe for concurrent
// use. Every timer it starts is a time.AfterFunc, so inside a
// testing/synctest bubble all of it runs on the bubble's virtual clock.
type Net struct {
	mu    sync.Mutex
	sent  map[uint64]uint32 // how often each message was sent on its link (jitter)
	nodes map[string]*Node
	alias map[string]func() string // group name → current master's name
	links map[[2]string]Link       // {client, node}
	conns map[*conn]struct{}
	dials uint64 // connections made so far (each conn's id)
	all   Link   // applies to every link on top of its own
	seed  uint64
	base  map[[2]string]Link // each link's own delay and jitter, under faults' ones
	// baseMin and baseMax bound a link's base delay (0, 0: links are
	// instant unless a fault delays them).
	baseMin, baseMax time.Duration
	// trace records every delivery (nil: not traced).
	trace *trace
	// instants runs deliveries and read deadlines in order (nil: each
	// has a timer of its own).
	instants *instants
}

// Base delay of a link, drawn per link from the seed: loopback-to-LAN
// round trips (0.2–1.6 ms), so that no reply arrives at the instant its
// request left and arithmetic that confuses the two shows.
const (
	BaseDelayMin = 100 * time.Microsecond
	BaseDelayMax = 800 * time.Microsecond
)

// NewNet returns an empty network whose jitter and links' base delays
// follow seed. Every link gets a base delay each way between BaseDelayMin
// and BaseDelayMax and a jitter of up to half of it, drawn from seed and
// the link's ends (the same link gets the same delay in a replay,
// whatever order links are first used in).
func NewNet(seed uint64) *Net {
	return &Net{
		sent:    map[uint64]uint32{},
		nodes:   map[string]*Node{},
		alias:   map[string]func() string{},
		links:   map[[2]string]Link{},
		conns:   map[*conn]struct{}{},
		seed:    seed,
		base:    map[[2]string]Link{},
		baseMin: BaseDelayMin,
		baseMax: BaseDelayMax,
	}
}

// SetBaseDelay bounds the links' base delays (0, 0: instant links, as
// the simulation had before; a test of the network's own mechanics may
// want them). Call it before the first dial.
func (n *Net) SetBaseDelay(min, max time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.baseMin, n.baseMax = min, max
	clear(n.base)
}

// BaseLink returns the base delay and jitter of the link between client
// and node.
func (n *Net) BaseLink(client, node string) Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.baseLocked(client, node)
}

// SetBaseLink replaces the base delay and jitter drawn for the link
// between client and node (a zero Link: an instant link), for a client
// whose faults are about timing finer than the drawn delays.
func (n *Net) SetBaseLink(client, node string, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.base[[2]string{client, node}] = l
}

func (n *Net) baseLocked(client, node string) Link {
	k := [2]string{client, node}
	if b, ok := n.base[k]; ok {
		return b
	}
	var b Link
	if n.baseMax > 0 {
		h := fnv.New64a()
		h.Write([]byte(client + "\x00" + node))
		r := rand.New(rand.NewPCG(n.seed, h.Sum64()))
		b.Delay = n.baseMin + time.Duration(r.Int64N(int64(n.baseMax-n.baseMin)+1))
		b.Jitter = time.Duration(r.Int64N(int64(b.Delay/2) + 1))
	}
	n.base[k] = b
	return b
}

func (n *Net) add(nd *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes[nd.name] = nd
}

// Alias makes dials to name go to the node whose name resolve returns at
// dial time (a group's master).
func (n *Net) Alias(name string, resolve func() string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.alias[name] = resolve
}

// SetLink sets the link between client and node (node: a node's name, not
// an alias).
func (n *Net) SetLink(client, node string, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l == (Link{}) {
		delete(n.links, [2]string{client, node})
		return
	}
	n.links[[2]string{client, node}] = l
}

// LinkOf returns the link between client and node.
func (n *Net) LinkOf(client, node string) Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[[2]string{client, node}]
}

// Dialer returns the go-redis Dialer of client: addr is a node's name or
// an alias.
func (n *Net) Dialer(client string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		return n.Dial(ctx, client, addr)
	}
}

// Dial connects client to the node addr names. A node that is down
// refuses; a link that drops requests accepts the connection and then
// drops what is sent (as toxiproxy's timeout toxic does).
func (n *Net) Dial(ctx context.Context, client, addr string) (net.Conn, error) {
	n.mu.Lock()
	name := addr
	if r, ok := n.alias[addr]; ok {
		n.mu.Unlock()
		name = r()
		n.mu.Lock()
	}
	nd := n.nodes[name]
	n.mu.Unlock()
	if nd == nil {
		return nil, fmt.Errorf("sim: dial %s: no such node", addr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A node that would not answer refuses new connections (toxiproxy's
	// Disable rather than its timeout): go-redis sends HELLO on a new
	// connection while holding a PubSub's mutex, and goroutines waiting on
	// a mutex keep a synctest bubble's clock from advancing, so a handshake
	// that waits for time to pass would freeze the run.
	if l := n.LinkOf(client, name); l.CutRequests || l.CutReplies || nd.isPaused() {
		// Traced: a refused dial leaves nothing else in the trace, and
		// go-redis retries it a second later.
		n.trace.event("refused", nil, client, name)
		return nil, ErrTaken
	}
	c := &conn{net: n, client: client, node: name, via: addr, born: time.Now()}
	c.up = newHalf(c, true)
	c.down = newHalf(c, false)
	server := &serverConn{c: c}
	if err := nd.serve(server); err != nil {
		n.trace.event("refused", nil, client, name)
		return nil, err
	}
	n.mu.Lock()
	n.dials++
	c.id = n.dials
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	return &clientConn{c: c}, nil
}

// closeConns closes every connection that match selects, oldest first:
// closing one wakes its readers, and goroutines woken at one instant run
// in the order they were woken, which must not be the map's.
func (n *Net) closeConns(match func(c *conn) bool) {
	n.mu.Lock()
	var cs []*conn
	for c := range n.conns {
		if match(c) {
			cs = append(cs, c)
		}
	}
	n.mu.Unlock()
	slices.SortFunc(cs, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	for _, c := range cs {
		c.close()
	}
}

// fate decides what happens to msg from client to node (up) or back:
// dropped, or delivered after a delay.
func (n *Net) fate(client, node string, up bool, msg []byte) (drop bool, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[[2]string{client, node}]
	a := n.all
	if up {
		drop = l.CutRequests || a.CutRequests
	} else {
		drop = l.CutReplies || a.CutReplies
	}
	b := n.baseLocked(client, node)
	delay = b.Delay + l.Delay + a.Delay
	if j := b.Jitter + l.Jitter + a.Jitter; j > 0 {
		delay += time.Duration(n.drawLocked(client, node, up, msg) % uint64(j+1))
	}
	return drop, delay
}

// drawLocked is the jitter draw of msg: a hash of the seed, the link's
// direction, the message's bytes and how many times these bytes were sent
// on it before. Not a draw from one generator in sending order: goroutines
// that send at the same virtual instant (a client's fan-out, its
// background label renewal beside a pub/sub command) send in an order the
// Go scheduler picks, and a replay must give each message its delay
// whatever that order.
func (n *Net) drawLocked(client, node string, up bool, msg []byte) uint64 {
	h := fnvByte(fnvString(fnvByte(fnvString(fnvOffset, client), 0), node), 0)
	if up {
		h = fnvByte(h, 1)
	}
	k := msgKey(h, msg)
	i := n.sent[k]
	n.sent[k] = i + 1
	return mix(n.seed ^ mix(k+uint64(i)))
}

// msgKey is a hash of h and msg, a write of one end, that does not
// depend on the order of the commands a client pipelined in it: each
// command's hash, summed. The commands of one pipeline often come from
// goroutines of one instant (a batcher collects its callers' calls, a lock
// of several names releases them all at once), in an order the Go
// scheduler picks; a replay must draw the write's delay whatever that
// order. A write that is not a whole number of RESP arrays of bulk strings
// (a node's reply, a write cut short) is hashed as it is.
func msgKey(h uint64, msg []byte) uint64 {
	if size, ok := commandSize(msg); !ok || size == len(msg) {
		return fnvBytes(h, msg)
	}
	var sum uint64
	for rest := msg; len(rest) > 0; {
		size, ok := commandSize(rest)
		if !ok {
			return fnvBytes(h, msg)
		}
		sum += mix(fnvBytes(h, rest[:size]))
		rest = rest[size:]
	}
	return sum
}

// commandSize is the length of the command msg starts with, a RESP array
// of bulk strings as clients write them; false when msg does not start
// with a whole one.
func commandSize(msg []byte) (int, bool) {
	i, n, ok := respLength(msg, 0, '*')
	if !ok {
		return 0, false
	}
	for range n {
		var size int
		if i, size, ok = respLength(msg, i, '$'); !ok || size < 0 || i+size+2 > len(msg) ||
			msg[i+size] != '\r' || msg[i+size+1] != '\n' {
			return 0, false
		}
		i += size + 2
	}
	return i, true
}

// respLength reads the header "<kind><decimal>\r\n" at msg[i:] and returns
// the index after it and the number.
func respLength(msg []byte, i int, kind byte) (int, int, bool) {
	if i >= len(msg) || msg[i] != kind {
		return 0, 0, false
	}
	n, j := 0, i+1
	for ; j < len(msg) && msg[j] >= '0' && msg[j] <= '9'; j++ {
		if n > 1<<30 {
			return 0, 0, false
		}
		n = n*10 + int(msg[j]-'0')
	}
	if j == i+1 || j+1 >= len(msg) || msg[j] != '\r' || msg[j+1] != '\n' {
		return 0, 0, false
	}
	return j + 2, n, true
}

// mix is SplitMix64's finaliser: spreads a key over 64 bits.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streamID names one of the seed's random streams: a hash of its parts.
func streamID(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// unlockFate decides what happens to a pub/sub message from node to
// client: dropped, or delayed by that much more.
func (n *Net) unlockFate(client, node string) (drop bool, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[[2]string{client, node}]
	return l.DropUnlocks || n.all.DropUnlocks, l.UnlockDelay + n.all.UnlockDelay
}

// isPubSubMessage reports whether msg, a node's write, is a pub/sub
// message (RESP3 push or RESP2 array of "message" or "pmessage").
func isPubSubMessage(msg []byte) bool {
	for _, p := range [][]byte{[]byte(">3\r\n$7\r\nmessage\r\n"), []byte(">4\r\n$8\r\npmessage\r\n"),
		[]byte("*3\r\n$7\r\nmessage\r\n"), []byte("*4\r\n$8\r\npmessage\r\n")} {
		if bytes.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// sortedSubscribe returns msg, a client's write, with the channels of a
// lone subscribe, psubscribe or ssubscribe of several in sorted order,
// else msg itself. go-redis resubscribes a reconnected PubSub with its
// channels in map order, which differs between runs of one seed: its bytes
// would draw another jitter and the node would confirm the channels in
// another order. Redis treats the channels of one command alike, so the
// order is no part of what the client asked. A write the parser does not
// read whole (a pipeline, another command) stays as it is.
func sortedSubscribe(msg []byte) []byte {
	rest, ok := bytes.CutPrefix(msg, []byte("*"))
	if !ok {
		return msg
	}
	line, rest, ok := bytes.Cut(rest, []byte("\r\n"))
	n, err := strconv.Atoi(string(line))
	if !ok || err != nil || n < 3 || n > len(msg) {
		return msg
	}
	// bulk cuts the next bulk string off rest.
	bulk := func() ([]byte, bool) {
		l, ok := bytes.CutPrefix(rest, []byte("$"))
		if !ok {
			return nil, false
		}
		line, l, ok := bytes.Cut(l, []byte("\r\n"))
		size, err := strconv.Atoi(string(line))
		if !ok || err != nil || size < 0 || len(l) < size+2 || string(l[size:size+2]) != "\r\n" {
			return nil, false
		}
		rest = l[size+2:]
		return l[:size], true
	}
	// Every command passes here: look at its name (go-redis writes it in
	// lower case) before anything else.
	cmd, ok := bulk()
	if !ok {
		return msg
	}
	switch string(cmd) {
	case "subscribe", "psubscribe", "ssubscribe":
	default:
		return msg
	}
	args := make([][]byte, 1, n)
	args[0] = cmd
	for range n - 1 {
		a, ok := bulk()
		if !ok {
			return msg
		}
		args = append(args, a)
	}
	if len(rest) != 0 || slices.IsSortedFunc(args[1:], bytes.Compare) {
		return msg
	}
	slices.SortFunc(args[1:], bytes.Compare)
	out := fmt.Appendf(make([]byte, 0, len(msg)), "*%d\r\n", n)
	for _, a := range args {
		out = fmt.Appendf(out, "$%d\r\n", len(a))
		out = append(append(out, a...), "\r\n"...)
	}
	return out
}

// conn is one connection: up carries the client's bytes to the node, down
// the node's to the client.
type conn struct {
	net          *Net
	id           uint64 // order of the dial that made it
	client, node string
	via          string // the address dialled (a node or an alias)
	born         time.Time
	handshake    atomic.Bool // the client's latest message was its handshake
	up, down     *half
	once         sync.Once
}

func (c *conn) close() {
	c.once.Do(func() {
		c.up.shut()
		c.down.shut()
		c.net.mu.Lock()
		delete(c.net.conns, c)
		c.net.mu.Unlock()
	})
}

// isHandshake reports whether msg, a client's write, starts with a
// command go-redis sends while it sets a new connection up (and may hold
// a PubSub's mutex meanwhile).
func isHandshake(msg []byte) bool {
	// *<n>\r\n$<len>\r\n<command>\r\n
	i := bytes.Index(msg, []byte("\r\n$"))
	if len(msg) == 0 || msg[0] != '*' || i < 0 {
		return false
	}
	j := bytes.Index(msg[i+3:], []byte("\r\n"))
	if j < 0 {
		return false
	}
	cmd := msg[i+3+j+2:]
	for _, w := range []string{"hello", "client", "auth", "select"} {
		if len(cmd) >= len(w) && strings.EqualFold(string(cmd[:len(w)]), w) {
			return true
		}
	}
	return false
}

// half is one direction of a connection: an unbounded buffer of delivered
// bytes, fed by timers so that delivery follows the link's delay.
type half struct {
	c  *conn
	up bool

	mu       sync.Mutex
	buf      []byte
	ready    chan struct{} // has a token when buf grew
	done     chan struct{} // closed by shut
	shutOnce sync.Once
	broken   bool      // a message was dropped: the stream is dead
	last     time.Time // delivery time of the latest message (FIFO)
	queue    []timed   // messages on their way, in order
	deadline time.Time // read deadline
}

func newHalf(c *conn, up bool) *half {
	return &half{c: c, up: up, ready: make(chan struct{}, 1), done: make(chan struct{})}
}

func (h *half) shut() { h.shutOnce.Do(func() { close(h.done) }) }

func (h *half) isShut() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// send queues p for delivery as the link decides.
func (h *half) send(p []byte) (int, error) {
	if h.isShut() {
		return 0, net.ErrClosed
	}
	if h.up {
		p = sortedSubscribe(p)
	}
	drop, delay := h.c.net.fate(h.c.client, h.c.node, h.up, p)
	if !h.up && !drop && isPubSubMessage(p) {
		lost, more := h.c.net.unlockFate(h.c.client, h.c.node)
		if lost {
			return len(p), nil // lost, the stream intact
		}
		delay += more
	}
	msg := append([]byte(nil), p...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if drop || h.broken {
		h.broken = true
		return len(p), nil
	}
	now := time.Now()
	if h.up {
		h.c.handshake.Store(isHandshake(msg))
	}
	if h.c.handshake.Load() {
		// The handshake (HELLO, CLIENT SETINFO and their replies) is not
		// delayed (see Dial); every command after it is.
		delay = 0
	}
	at := now.Add(delay)
	if at.Before(h.last) {
		at = h.last
	}
	h.last = at
	if !at.After(now) && len(h.queue) == 0 {
		h.deliverLocked(msg)
		return len(p), nil
	}
	// Messages wait in one queue per direction, in sending order, and one
	// timer delivers the due ones: timers due at the same instant fire in
	// no set order, so a timer per message would reorder a stream.
	h.queue = append(h.queue, timed{at: at, msg: msg})
	if len(h.queue) == 1 {
		h.deliverAt(at, now)
	}
	return len(p), nil
}

// timed is a message and when it arrives.
type timed struct {
	at  time.Time
	msg []byte
}

// deliverDue delivers the queued messages that are due, in order, and
// sets a timer for the next one.
func (h *half) deliverDue() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(h.queue) && !h.queue[i].at.After(now); i++ {
		h.deliverLocked(h.queue[i].msg)
	}
	h.queue = h.queue[i:]
	if len(h.queue) == 0 {
		h.queue = nil
		return
	}
	h.deliverAt(h.queue[0].at, now)
}

// deliverAt has deliverDue run at at.
func (h *half) deliverAt(at, now time.Time) {
	if in := h.c.net.instants; in != nil {
		in.deliverAt(at, h.seq(), h.deliverDue)
		return
	}
	time.AfterFunc(at.Sub(now), h.deliverDue)
}

// seq orders the connection ends' events of one instant: by the dial
// that made the connection, then direction.
func (h *half) seq() uint64 { return h.c.id<<1 | boolBit(h.up) }

func (h *half) deliverLocked(msg []byte) {
	if h.isShut() {
		return
	}
	dir := "down"
	if h.up {
		dir = "up"
	}
	h.c.net.trace.delivery(dir, h.c.client, h.c.node, msg)
	h.buf = append(h.buf, msg...)
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

func (h *half) setDeadline(t time.Time) {
	h.mu.Lock()
	h.deadline = t
	h.mu.Unlock()
	// Wake a blocked reader so it looks at the new deadline.
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// recv reads delivered bytes, blocking until some arrive, the connection
// closes or the read deadline passes.
func (h *half) recv(p []byte) (int, error) {
	for {
		h.mu.Lock()
		if len(h.buf) > 0 {
			n := copy(p, h.buf)
			h.buf = h.buf[n:]
			if len(h.buf) == 0 {
				h.buf = nil
			}
			h.mu.Unlock()
			return n, nil
		}
		dl := h.deadline
		h.mu.Unlock()
		if h.isShut() {
			return 0, io.EOF
		}
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			if in := h.c.net.instants; in != nil {
				e := in.deadline(dl, h.seq())
				select {
				case <-h.ready:
					in.remove(e)
				case <-h.done:
					in.remove(e)
				case <-e.ch:
				}
				continue
			}
			t := time.NewTimer(d)
			timeout = t.C
			select {
			case <-h.ready:
			case <-h.done:
			case <-timeout:
			}
			t.Stop()
			continue
		}
		select {
		case <-h.ready:
		case <-h.done:
		}
	}
}

// addr is a net.Addr naming one end.
type addr string

func (a addr) Network() string { return "sim" }
func (a addr) String() string  { return string(a) }

// clientConn is the client's end: writes go up, reads come down.
type clientConn struct{ c *conn }

func (e *clientConn) Read(p []byte) (int, error)  { return e.c.down.recv(p) }
func (e *clientConn) Write(p []byte) (int, error) { return e.c.up.send(p) }
func (e *clientConn) Close() error                { e.c.close(); return nil }
func (e *clientConn) LocalAddr() net.Addr         { return addr(e.c.client) }
func (e *clientConn) RemoteAddr() net.Addr        { return addr(e.c.via) }
func (e *clientConn) SetDeadline(t time.Time) error {
	e.c.down.setDeadline(t)
	return nil
}
func (e *clientConn) SetReadDeadline(t time.Time) error { e.c.down.setDeadline(t); return nil }
func (e *clientConn) SetWriteDeadline(time.Time) error  { return nil }

// serverConn is the node's end: reads come up, writes go down.
type serverConn struct{ c *conn }

func (e *serverConn) Read(p []byte) (int, error)         { return e.c.up.recv(p) }
func (e *serverConn) Write(p []byte) (int, error)        { return e.c.down.send(p) }
func (e *serverConn) Close() error                       { e.c.close(); return nil }
func (e *serverConn) LocalAddr() net.Addr                { return addr(e.c.node) }
func (e *serverConn) RemoteAddr() net.Addr               { return addr(e.c.client) }
func (e *serverConn) SetDeadline(time.Time) error        { return nil }
func (e *serverConn) SetReadDeadline(time.Time) error    { return nil }
func (e *serverConn) SetWriteDeadline(t time.Time) error { return nil }

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
