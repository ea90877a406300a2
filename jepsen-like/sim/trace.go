package sim

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// TraceHash identifies a run's event trace: two runs with the same hash
// delivered the same messages, ran the same commands, injected the same
// faults and saw the same lock calls return, in the same order at the same
// virtual instants.
type TraceHash uint64

func (h TraceHash) String() string { return fmt.Sprintf("%016x", uint64(h)) }

// ParseTraceHash reads a hash as String prints it.
func ParseTraceHash(s string) (TraceHash, error) {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || len(s) != 16 {
		return 0, fmt.Errorf("sim: trace hash %q: want 16 hex digits", s)
	}
	return TraceHash(v), nil
}

// trace folds a run's events into one FNV-64a hash: every message a
// link delivers (which connection end, when, its bytes), every client
// command a node executes, every dial the network refuses, and at the end the history (each lock call with
// its return and outcome, each fault edge). Virtual instants are folded in
// order; the events of one instant as a sorted set, since goroutines woken
// at one instant run in an order the Go scheduler picks: what they do to
// each other shows in the replies and in later instants. With
// SIM_TRACE=FILE in the environment the events are also written to FILE as
// text, an instant's sorted likewise, so that two runs' traces can be
// diffed.
type trace struct {
	mu    sync.Mutex
	h     hash.Hash64
	start time.Time
	at    time.Duration // the current instant
	batch []traced      // its events so far
	log   io.Writer
	close func() error
	// logging: SIM_TRACE asked for the events as text (set once).
	logging bool
	buf     [8]byte
}

// traced is one event of the current instant: its hash and, when
// logging, its text.
type traced struct {
	sum  uint64
	text string
}

// traceEnv names the file SIM_TRACE asks the events to be written to.
const traceEnv = "SIM_TRACE"

func newTrace() *trace {
	t := &trace{h: fnv.New64a(), start: time.Now()}
	if path := os.Getenv(traceEnv); path != "" {
		if f, err := os.Create(path); err == nil {
			// Buffered: a write per event would be a system call per
			// event, and a goroutine in a system call may lose its
			// processor to another, which reorders the run it traces.
			w := bufio.NewWriterSize(f, 1<<20)
			t.log, t.logging = w, true
			t.close = func() error { return errors.Join(w.Flush(), f.Close()) }
		}
	}
	return t
}

// event adds one event: its kind, its fields and its payload, at the
// current virtual instant.
func (t *trace) event(kind string, payload []byte, fields ...string) {
	if t == nil {
		return
	}
	e := fnvString(fnvOffset, kind)
	for _, f := range fields {
		e = fnvString(fnvByte(e, 0), f)
	}
	e = fnvBytes(fnvByte(e, 1), payload)
	text := ""
	if t.logging {
		text = fmt.Sprintf("%s %v %q", kind, fields, payload)
	}
	t.add(e, text)
}

// delivery adds a message a link delivered: dir ("up" or "down"), its
// ends and its bytes. A write of several pipelined commands counts as the
// set of its commands (msgKey): their order is the scheduler's.
func (t *trace) delivery(dir, client, node string, msg []byte) {
	if t == nil {
		return
	}
	e := fnvString(fnvOffset, dir)
	e = fnvString(fnvByte(e, 0), client)
	e = fnvString(fnvByte(e, 0), node)
	e = msgKey(fnvByte(e, 1), msg)
	text := ""
	if t.logging {
		text = fmt.Sprintf("%s [%s %s] %s", dir, client, node, commandsText(msg))
	}
	t.add(e, text)
}

// commandsText is msg as text: a pipeline's commands quoted one by one,
// sorted (as msgKey hashes them), anything else quoted whole.
func commandsText(msg []byte) string {
	var cmds []string
	for rest := msg; len(rest) > 0; {
		size, ok := commandSize(rest)
		if !ok {
			return fmt.Sprintf("%q", msg)
		}
		cmds = append(cmds, fmt.Sprintf("%q", rest[:size]))
		rest = rest[size:]
	}
	slices.Sort(cmds)
	return strings.Join(cmds, " ")
}

// command adds a client command a node runs.
func (t *trace) command(node, cmd string, args []string) {
	if t == nil {
		return
	}
	e := fnvString(fnvByte(fnvString(fnvOffset, "cmd"), 0), node)
	e = fnvString(fnvByte(e, 0), cmd)
	for _, a := range args {
		e = fnvString(fnvByte(e, 0), a)
	}
	text := ""
	if t.logging {
		text = fmt.Sprintf("cmd %s %s %q", node, cmd, args)
	}
	t.add(e, text)
}

// add adds an event's hash to the current instant; text is its text for
// SIM_TRACE's file.
func (t *trace) add(sum uint64, text string) {
	at := time.Since(t.start)
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := traced{sum: sum, text: text}
	if at != t.at {
		t.flushLocked()
		t.at = at
	}
	t.batch = append(t.batch, ev)
}

// FNV-1a, 64 bits, without hash.Hash's allocation and interface calls:
// it runs for every message.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvBytes(h uint64, p []byte) uint64 {
	for _, b := range p {
		h = (h ^ uint64(b)) * fnvPrime
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// flushLocked folds the current instant's events into the hash.
func (t *trace) flushLocked() {
	if len(t.batch) == 0 {
		return
	}
	slices.SortFunc(t.batch, func(a, b traced) int { return cmp.Or(cmp.Compare(a.sum, b.sum), strings.Compare(a.text, b.text)) })
	binary.LittleEndian.PutUint64(t.buf[:], uint64(t.at))
	t.h.Write(t.buf[:])
	for _, ev := range t.batch {
		binary.LittleEndian.PutUint64(t.buf[:], ev.sum)
		t.h.Write(t.buf[:])
		if t.log != nil {
			fmt.Fprintf(t.log, "%v %s\n", t.at, ev.text)
		}
	}
	t.batch = t.batch[:0]
}

// sum folds the history in and returns the trace's hash. Ops are folded
// by worker and instant, not by id: ids and the clock's 1 ns steps follow
// the order in which goroutines of one instant recorded (see stampClock).
func (t *trace) sum(h history.History, clock *stampClock) TraceHash {
	type canon struct {
		worker int
		at     time.Duration
		text   string
	}
	byID := make(map[history.OpID]history.Op, len(h.Ops))
	for _, op := range h.Ops {
		byID[op.ID] = op
	}
	ops := make([]canon, 0, len(h.Ops))
	for _, op := range h.Ops {
		lease := ""
		if l, ok := byID[op.Lease]; ok && op.Lease != 0 {
			lease = fmt.Sprintf("%d@%d", l.Worker, clock.instant(l.Invoke))
		}
		inv, done := clock.instant(op.Invoke), clock.instant(op.Complete)
		op.ID, op.Lease, op.Invoke, op.Complete = 0, 0, 0, 0
		b, _ := json.Marshal(op)
		ops = append(ops, canon{op.Worker, inv, fmt.Sprintf("%d %d %s %s", inv, done, lease, b)})
	}
	slices.SortFunc(ops, func(a, b canon) int {
		return cmp.Or(cmp.Compare(a.worker, b.worker), cmp.Compare(a.at, b.at), strings.Compare(a.text, b.text))
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLocked()
	for _, op := range ops {
		t.h.Write([]byte(op.text))
		if t.log != nil {
			fmt.Fprintf(t.log, "op %s\n", op.text)
		}
	}
	if t.close != nil {
		_ = t.close()
		t.log, t.close = nil, nil
	}
	return TraceHash(t.h.Sum64())
}

// stampClock is the history's clock that remembers the virtual instant of
// every stamp it gave: stamps are strictly increasing, 1 ns apart at one
// instant, in the order goroutines woken at that instant asked.
type stampClock struct {
	*history.MonotonicClock
	mu sync.Mutex
	at map[time.Duration]time.Duration
}

func newStampClock() *stampClock {
	return &stampClock{MonotonicClock: history.NewClock(), at: map[time.Duration]time.Duration{}}
}

func (c *stampClock) Now() time.Duration {
	v := c.MonotonicClock.Now()
	d := time.Since(c.Start())
	c.mu.Lock()
	c.at[v] = d
	c.mu.Unlock()
	return v
}

// instant is the virtual instant of stamp v (v itself when the clock did
// not give it).
func (c *stampClock) instant(v time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.at[v]; ok {
		return d
	}
	return v
}
