// Package testutil holds the small helpers that tests of several packages
// and modules of this repository share (internal: not for users).
package testutil

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
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
