package matrix

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// unlockLoss drops or delays the pub/sub messages (unlock notifications)
// the workers' connections receive, without breaking the connections:
// toxiproxy's toxics act on a proxy's whole byte stream (they delay every
// reply or cut the connection), so the loss sits on the client's side of
// the proxy, in a go-redis dial hook that reads the RESP stream of every
// connection that subscribed and lets through all but the messages.
type unlockLoss struct {
	drop atomic.Bool
	late atomic.Int64 // ns; 0: on time
}

// hook is the dial hook of a worker's clients.
func (u *unlockLoss) hook(int) redis.Hook { return lossHook{u} }

type lossHook struct{ u *unlockLoss }

func (h lossHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return c, err
		}
		return &lossConn{Conn: c, u: h.u}, nil
	}
}

func (h lossHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h lossHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// lossFault is one window of the loss: every message dropped (late 0) or
// each delivered late.
type lossFault struct {
	u    *unlockLoss
	late time.Duration
}

func (f *lossFault) String() string {
	if f.late > 0 {
		return fmt.Sprintf("unlock-loss(late %v)", f.late)
	}
	return "unlock-loss(dropped)"
}

func (f *lossFault) Inject(context.Context) error {
	if f.late > 0 {
		f.u.late.Store(int64(f.late))
	} else {
		f.u.drop.Store(true)
	}
	return nil
}

func (f *lossFault) Recover(context.Context) error {
	f.u.drop.Store(false)
	f.u.late.Store(0)
	return nil
}

// lossConn filters what a subscribed connection reads.
type lossConn struct {
	net.Conn
	u          *unlockLoss
	subscribed atomic.Bool

	mu     sync.Mutex
	in     []byte // read from the connection, not yet framed
	out    []byte // framed, for the caller
	opaque bool   // a frame could not be parsed: pass everything through
}

func (c *lossConn) Write(p []byte) (int, error) {
	if !c.subscribed.Load() && (bytes.Contains(bytes.ToLower(p), []byte("subscribe"))) {
		c.subscribed.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *lossConn) Read(p []byte) (int, error) {
	if !c.subscribed.Load() {
		return c.Conn.Read(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.out) == 0 {
		if c.opaque && len(c.in) > 0 {
			c.out, c.in = c.in, nil
			break
		}
		if !c.opaque {
			if n := frameEnd(c.in, 0); n > 0 {
				frame := c.in[:n]
				c.in = c.in[n:]
				if isMessage(frame) {
					if c.u.drop.Load() {
						continue // lost
					}
					if d := time.Duration(c.u.late.Load()); d > 0 {
						time.Sleep(d) // late; the frames behind it wait too, as on a slow link
					}
				}
				c.out = append(c.out, frame...)
				break
			} else if n < 0 {
				c.opaque = true
				continue
			}
		}
		buf := make([]byte, 4096)
		n, err := c.Conn.Read(buf)
		c.in = append(c.in, buf[:n]...)
		if err != nil && n == 0 {
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// isMessage reports whether a RESP frame is a pub/sub message.
func isMessage(f []byte) bool {
	for _, p := range []string{">3\r\n$7\r\nmessage\r\n", ">4\r\n$8\r\npmessage\r\n", "*3\r\n$7\r\nmessage\r\n", "*4\r\n$8\r\npmessage\r\n"} {
		if bytes.HasPrefix(f, []byte(p)) {
			return true
		}
	}
	return false
}

// frameEnd returns the end of the RESP value at b[i:] (RESP2 and RESP3),
// 0 when it is not complete yet, -1 when it cannot be parsed.
func frameEnd(b []byte, i int) int {
	if i >= len(b) {
		return 0
	}
	eol := bytes.Index(b[i:], []byte("\r\n"))
	if eol < 0 {
		return 0
	}
	line := string(b[i+1 : i+eol])
	next := i + eol + 2
	switch b[i] {
	case '+', '-', ':', '_', ',', '#', '(':
		return next
	case '$', '!', '=':
		n, err := strconv.Atoi(line)
		if err != nil {
			return -1
		}
		if n < 0 {
			return next
		}
		if next+n+2 > len(b) {
			return 0
		}
		return next + n + 2
	case '*', '>', '~', '%', '|':
		n, err := strconv.Atoi(line)
		if err != nil {
			return -1
		}
		if b[i] == '%' || b[i] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			next = frameEnd(b, next)
			if next <= 0 {
				return next
			}
		}
		if b[i] == '|' {
			// An attribute precedes the value it describes.
			return frameEnd(b, next)
		}
		return next
	}
	return -1
}
