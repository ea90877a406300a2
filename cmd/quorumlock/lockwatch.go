package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// reportEvery is how often a waiting lock repeats that too few nodes
// answer, while they still do not.
var reportEvery = 5 * time.Second

// nodeWatch follows the attempts of one lock (a observe.Observer) and keeps
// each node's last answer. While lock waits it says on stderr when fewer
// nodes answer or vote than a quorum needs, and why: once, then again only
// when which nodes are silent or sitting out changes, or every
// reportEvery; and when they answer again. When the lock is not obtained it tells the
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
	shape    string    // which nodes were silent or sitting out at the last report
	since    time.Time // when too few answered first, before a report
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
func (w *nodeWatch) Observe(_ context.Context, e observe.Event) {
	if e.Op != observe.OpAttempt || e.Name != w.name {
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
	answer, silent, shape, unheard := w.count()
	now := time.Now()
	switch {
	case answer < w.need:
		if w.since.IsZero() {
			w.since = now
		}
		// A node not heard from yet may only not have been waited for:
		// the first report waits a moment for every node's word.
		if !w.short && unheard > 0 && now.Sub(w.since) < firstReportGrace {
			return
		}
		// The reasons' countdowns move with every attempt: a report is
		// repeated when the nodes it names change, or every reportEvery.
		if !w.short || shape != w.shape || now.Sub(w.reported) >= reportEvery {
			fmt.Fprintf(w.out, "quorumlock lock: waiting for %q: %s\n", w.name, silent)
			w.short, w.reported, w.shape = true, now, shape
		}
	case w.short:
		fmt.Fprintf(w.out, "quorumlock lock: waiting for %q: %d of %d nodes answer again, enough for a lock\n", w.name, answer, len(w.nodes))
		w.short, w.shape, w.since = false, "", time.Time{}
	default:
		w.since = time.Time{}
	}
}

// firstReportGrace is how long the first report waits for a word from
// every node.
const firstReportGrace = 500 * time.Millisecond

// count is how many nodes answer and may vote (a node not heard from yet
// counts: an attempt may be decided before it answers) and, when fewer
// than a lock needs, what to say: how many nodes do not answer, how many
// sit out after a restart (restart detection), how many were not waited
// for, with each silent or sitting node and why; shape names those nodes
// and their kind, without the reasons' changing numbers. w.mu is held.
func (w *nodeWatch) count() (answer int, say, shape string, unheard int) {
	var reasons, kinds []string
	silent, sitting := 0, 0
	for _, n := range w.nodes {
		a, ok := w.last[n]
		switch {
		case !ok:
			unheard++
			continue
		case a.err == nil:
			continue
		case errors.Is(a.err, quorum.ErrNodeRestarted):
			sitting++
			kinds = append(kinds, n+" sits out")
		default:
			silent++
			kinds = append(kinds, n+" silent")
		}
		reasons = append(reasons, n+": "+nodeReason(a.err))
	}
	n := len(w.nodes)
	answer = n - silent - sitting
	if answer >= w.need {
		return answer, "", "", unheard
	}
	var parts []string
	// of is "k of n nodes" when every node was heard, else "k nodes".
	of := func(k int) string {
		if len(parts) > 0 {
			return strconv.Itoa(k)
		}
		if unheard > 0 {
			return fmt.Sprintf("%d nodes", k)
		}
		return fmt.Sprintf("%d of %d nodes", k, n)
	}
	if silent > 0 {
		parts = append(parts, of(silent)+" do not answer")
	}
	if sitting > 0 {
		parts = append(parts, of(sitting)+" sit out after a restart")
	}
	if unheard > 0 {
		parts = append(parts, strconv.Itoa(unheard)+" not waited for")
	}
	say = fmt.Sprintf("%s, a lock needs %d of %d (%s)", strings.Join(parts, ", "), w.need, n, strings.Join(reasons, "; "))
	return answer, say, strings.Join(kinds, ","), unheard
}

// unsure says, after a lock was not obtained, whether it was because too
// few nodes answered ("" when a quorum answered: another owner holds it).
func (w *nodeWatch) unsure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if answer, say, _, _ := w.count(); answer < w.need {
		return say
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
	say := fmt.Sprintf("held by another owner on %d of %d nodes", refused, len(w.nodes))
	if unheard := len(w.nodes) - len(w.last); unheard > 0 {
		say += fmt.Sprintf(", %d not waited for", unheard)
	}
	return say
}
