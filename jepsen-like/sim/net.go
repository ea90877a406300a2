package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"
)

// ErrRefused is the dial error of a node that is down (crashed, not yet
// restarted): the in-memory form of "connection refused".
var ErrRefused = errors.New("sim: connection refused")

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
	// from the network's seeded generator. Messages of one connection keep
	// their order (TCP); messages of different connections may overtake
	// each other.
	Delay, Jitter time.Duration
}

// Net is the in-memory network of one simulation: clients dial nodes by
// name through Dialer, and faults change the links. Safe for concurrent
// use. Every timer it starts is a time.AfterFunc, so inside a
// testing/synctest bubble all of it runs on the bubble's virtual clock.
type Net struct {
	mu    sync.Mutex
	rng   *rand.Rand
	nodes map[string]*Node
	alias map[string]func() string // group name → current master's name
	links map[[2]string]Link       // {client, node}
	conns map[*conn]struct{}
	all   Link // applies to every link on top of its own
}

// NewNet returns an empty network whose jitter follows seed.
func NewNet(seed uint64) *Net {
	return &Net{
		rng:   rand.New(rand.NewPCG(seed, 0x6e6574)),
		nodes: map[string]*Node{},
		alias: map[string]func() string{},
		links: map[[2]string]Link{},
		conns: map[*conn]struct{}{},
	}
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
		return nil, ErrRefused
	}
	c := &conn{net: n, client: client, node: name, via: addr, born: time.Now()}
	c.up = newHalf(c, true)
	c.down = newHalf(c, false)
	server := &serverConn{c: c}
	if err := nd.serve(server); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	return &clientConn{c: c}, nil
}

// closeConns closes every connection that match selects.
func (n *Net) closeConns(match func(c *conn) bool) {
	n.mu.Lock()
	var cs []*conn
	for c := range n.conns {
		if match(c) {
			cs = append(cs, c)
		}
	}
	n.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// fate decides what happens to a message from client to node (up) or back:
// dropped, or delivered after a delay.
func (n *Net) fate(client, node string, up bool) (drop bool, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[[2]string{client, node}]
	a := n.all
	if up {
		drop = l.CutRequests || a.CutRequests
	} else {
		drop = l.CutReplies || a.CutReplies
	}
	delay = l.Delay + a.Delay
	if j := l.Jitter + a.Jitter; j > 0 {
		delay += time.Duration(n.rng.Int64N(int64(j) + 1))
	}
	return drop, delay
}

// conn is one connection: up carries the client's bytes to the node, down
// the node's to the client.
type conn struct {
	net          *Net
	client, node string
	via          string // the address dialled (a node or an alias)
	born         time.Time
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
	drop, delay := h.c.net.fate(h.c.client, h.c.node, h.up)
	msg := append([]byte(nil), p...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if drop || h.broken {
		h.broken = true
		return len(p), nil
	}
	now := time.Now()
	if now.Equal(h.c.born) {
		// The handshake, at the dial's instant, is not delayed (see Dial).
		delay = 0
	}
	at := now.Add(delay)
	if at.Before(h.last) {
		at = h.last
	}
	h.last = at
	if !at.After(now) {
		h.deliverLocked(msg)
		return len(p), nil
	}
	time.AfterFunc(at.Sub(now), func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.deliverLocked(msg)
	})
	return len(p), nil
}

func (h *half) deliverLocked(msg []byte) {
	if h.isShut() {
		return
	}
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
