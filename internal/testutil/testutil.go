// Package testutil holds the small helpers that tests of several packages
// and modules of this repository share (internal: not for users).
package testutil

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
)

// Servers starts n redis-server processes with cfg for a test and returns
// them with one go-redis client each. Without a redis-server binary the
// test is skipped (failed when localredis.Required). t.Cleanup closes the
// clients, then checks that no key was left without a TTL and stops the
// servers, on failure too.
func Servers(t testing.TB, n int, cfg localredis.Config) ([]*localredis.Server, []redis.UniversalClient) {
	t.Helper()
	servers := localredis.StartNT(t, n, cfg)
	return servers, Clients(t, servers, nil)
}

// Clients returns a new go-redis client per server (its own connections
// and pub/sub, as another process has), closed in t.Cleanup, with hook(i)
// added to server i's when hook is not nil and returns one.
func Clients(t testing.TB, servers []*localredis.Server, hook func(i int) redis.Hook) []redis.UniversalClient {
	t.Helper()
	out := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		c := s.Client()
		if hook != nil {
			if h := hook(i); h != nil {
				c.AddHook(h)
			}
		}
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// URLs returns the servers' addresses as one --nodes value:
// "redis://host:port,redis://host:port,...".
func URLs(servers []*localredis.Server) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "redis://" + s.Addr()
	}
	return strings.Join(urls, ",")
}

// Eventually calls cond until it returns nil, and fails t with cond's last
// error when that has not happened within timeout. It is for a state the
// code reaches in the background with no event to wait on (a late node's
// answer, a subscription, a process's output): it looks every millisecond
// at first, then less often, up to every 50 ms.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(pause)
	}
}

// SyncBuffer is a bytes.Buffer safe for one goroutine writing (a logger, a
// command's output) while another reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// RefusedAddr is a loopback address where nothing listens: connections to
// it are refused at once.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	// A socket bound to a loopback port, not listening, until the test
	// ends: a connect there is refused, and no other process can take the
	// port meanwhile (a server a parallel test starts; a port listened on
	// and closed could be handed out again at once).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("RefusedAddr: bound to %v, not an IPv4 address", sa)
	}
	return "127.0.0.1:" + strconv.Itoa(in.Port)
}

// LateFirstRead delays the first read of a connection (go-redis' HELLO
// handshake on a new connection) by Delay, as a host too loaded to set a
// connection up in time does; later reads are not delayed.
type LateFirstRead struct {
	net.Conn
	Delay time.Duration
	read  atomic.Bool
}

func (c *LateFirstRead) Read(p []byte) (int, error) {
	if !c.read.Swap(true) {
		time.Sleep(c.Delay)
	}
	return c.Conn.Read(p)
}

// WaitKeyGone waits (at most 10 s, else fails t) until key exists on none
// of the nodes reached by clients. Unlock returns once a majority released;
// a test that then needs every node free waits here for the rest, with
// EXISTS (no script, so command counts are not disturbed).
func WaitKeyGone(t testing.TB, ctx context.Context, key string, clients ...redis.UniversalClient) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i, c := range clients {
		for c.Exists(ctx, key).Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still holds %s 10 s after the unlock", i, key)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// CheckOneLine fails t when err's text is not one line that carries the
// prefix "quorumlock:" exactly once, at its start (the library's error rule).
func CheckOneLine(t testing.TB, err error) {
	t.Helper()
	s := err.Error()
	if strings.Contains(s, "\n") {
		t.Errorf("error text has a newline: %q", s)
	}
	if !strings.HasPrefix(s, "quorumlock: ") || strings.Count(s, "quorumlock:") != 1 {
		t.Errorf("error text wants the prefix quorumlock: once: %q", s)
	}
}
