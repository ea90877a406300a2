package sim

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
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
// command a node executes, and at the end the history (each lock call with
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
	buf   [8]byte
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
			t.log, t.close = f, f.Close
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
	at := time.Since(t.start)
	e := fnv.New64a()
	e.Write([]byte(kind))
	for _, f := range fields {
		e.Write([]byte{0})
		e.Write([]byte(f))
	}
	e.Write([]byte{1})
	e.Write(payload)
	ev := traced{sum: e.Sum64()}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log != nil {
		ev.text = fmt.Sprintf("%s %v %q", kind, fields, payload)
	}
	if at != t.at {
		t.flushLocked()
		t.at = at
	}
	t.batch = append(t.batch, ev)
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

// sum folds the history in and returns the trace's hash.
func (t *trace) sum(h history.History) TraceHash {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLocked()
	for _, op := range h.Ops {
		b, _ := json.Marshal(op)
		t.h.Write(b)
		if t.log != nil {
			fmt.Fprintf(t.log, "op %s\n", b)
		}
	}
	if t.close != nil {
		_ = t.close()
		t.log, t.close = nil, nil
	}
	return TraceHash(t.h.Sum64())
}
