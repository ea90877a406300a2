package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

// reportEvery is how often a waiting lock repeats that too few nodes
// answer, while they still do not.
var reportEvery = 5 * time.Second

// nodeWatch follows the attempts of one lock (a quorum.Observer) and keeps
// each node's last answer. While lock waits it says on stderr, at once and
// every reportEvery, when fewer nodes answer than a quorum needs, and why;
// and when they answer again. When the lock is not obtained it tells the
// two reasons apart: another owner holds it, or too few nodes answered to
// know (exit 75 or 3).
type nodeWatch struct {
	name  string
	nodes []string // every node, in the client's order
	need  int
	out   io.Writer // nil: classify only (lock --try)

	mu       sync.Mutex
	last     map[string]nodeAnswer // the last word of each node that answered
	short    bool                  // the last report said too few answer
	reported time.Time
	silent   string // the silent nodes of the last report
}

// nodeAnswer is a node's last word in an attempt: a grant, a refusal
// (another owner holds the lock) or an error (it did not answer: refused
// the connection, timed out, or did not vote, e.g. a restarted node).
type nodeAnswer struct {
	refused bool
	err     error
}

func newNodeWatch(name string, out io.Writer) *nodeWatch {
	return &nodeWatch{name: name, out: out, last: map[string]nodeAnswer{}}
}

// setNodes gives the client's nodes, before the first attempt.
func (w *nodeWatch) setNodes(nodes []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes, w.need = nodes, majority(len(nodes))
}

// Observe takes the votes of the lock's attempts. A node that had not
// answered when the attempt was decided keeps its previous word.
func (w *nodeWatch) Observe(_ context.Context, e quorum.Event) {
	if e.Op != quorum.OpAttempt || e.Name != w.name {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range e.Votes {
		if !v.Answered {
			continue
		}
		w.last[v.Node] = nodeAnswer{refused: !v.Granted && v.Err == nil, err: v.Err}
	}
	if w.out == nil {
		return
	}
	answer, silent := w.count()
	switch {
	case answer < w.need:
		now := time.Now()
		if !w.short || silent != w.silent || now.Sub(w.reported) >= reportEvery {
			fmt.Fprintf(w.out, "quorumlock lock: waiting for %q: %s\n", w.name, silent)
			w.short, w.reported, w.silent = true, now, silent
		}
	case w.short:
		fmt.Fprintf(w.out, "quorumlock lock: waiting for %q: %d of %d nodes answer again, enough for a lock\n", w.name, answer, len(w.nodes))
		w.short, w.silent = false, ""
	}
}

// count is how many nodes answer (a node not heard from yet counts as
// answering: an attempt may be decided before it answers) and, when fewer
// than a lock needs, what to say: how many answer, or how many do not
// when some were not heard yet, with each silent node and why. w.mu is
// held.
func (w *nodeWatch) count() (int, string) {
	var parts []string
	heard := 0
	for _, n := range w.nodes {
		a, ok := w.last[n]
		if ok {
			heard++
		}
		if ok && a.err != nil {
			parts = append(parts, n+": "+nodeReason(a.err))
		}
	}
	answer, n := len(w.nodes)-len(parts), len(w.nodes)
	if answer >= w.need {
		return answer, ""
	}
	silent := " (" + strings.Join(parts, "; ") + ")"
	if heard < n {
		return answer, fmt.Sprintf("%d of %d nodes do not answer, a lock needs %d%s", len(parts), n, w.need, silent)
	}
	return answer, fmt.Sprintf("%d of %d nodes answer, a lock needs %d%s", answer, n, w.need, silent)
}

// unsure says, after a lock was not obtained, whether it was because too
// few nodes answered ("" when a quorum answered: another owner holds it).
func (w *nodeWatch) unsure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if answer, silent := w.count(); answer < w.need {
		return silent
	}
	return ""
}

// holders says on how many nodes another owner holds the lock.
func (w *nodeWatch) holders() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	refused := 0
	for _, a := range w.last {
		if a.refused {
			refused++
		}
	}
	if refused == 0 {
		return "the nodes did not grant it in time"
	}
	return fmt.Sprintf("held by another owner on %d of %d nodes", refused, len(w.nodes))
}
