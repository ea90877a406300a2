package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/quorumlock/quorumlock/internal/fanout"
	inode "github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
)

// Tools are the operator's tools over one quorum.Client's nodes: Check,
// Inspect, List, ForceUnlock. Get them from quorum.Client.Admin; they share
// the client's nodes and settings and are safe for concurrent use.
type Tools struct {
	nodes []*inode.Node
	cfg   Config
}

// Config is what the tools need to know of the client's settings.
type Config struct {
	Policy         multilock.Policy // who holds a quorum (Inspect)
	TTL            time.Duration    // the client's lock TTL
	AttemptTimeout time.Duration    // ForceUnlock waits it out between its steps
	ReleaseTimeout time.Duration    // bounds each node's ForceUnlock call
	Prefix         string           // the key prefix (Check)
	Fencing        bool             // WithFencing is on (Check grades persistence)
	// WaitReplicas is WithReplicaAck's replica count (0: off);
	// RestartDetection: restart detection applies to nodes without
	// persistence (the default and WithRestartDetection(true); false
	// with WithRestartDetection(false)). Check grades persistence by it.
	WaitReplicas     int
	RestartDetection bool
}

// New returns the tools over nodes (node.New, with the clients' key
// prefix: node.WithPrefix). Package quorum makes them for each Client
// (Client.Admin); call it directly only to inspect nodes without a Client.
// The tools do not close the nodes.
func New(nodes []*node.Node, cfg Config) *Tools {
	t := &Tools{nodes: make([]*inode.Node, len(nodes)), cfg: cfg}
	for i, n := range nodes {
		t.nodes[i] = inode.FromPublic(n)
	}
	return t
}

// Nodes names the nodes, in the client's order.
func (t *Tools) Nodes() []string {
	names := make([]string, len(t.nodes))
	for i, n := range t.nodes {
		names[i] = n.Name()
	}
	return names
}

// TTL is the client's lock TTL (quorum.WithTTL).
func (t *Tools) TTL() time.Duration { return t.cfg.TTL }

// ForceUnlock removes lock name on every node and wakes its waiters. It is
// an operator's tool: a holder that is still running is no longer protected
// (its watchdog reports ErrLeaseLost at the next renewal). by names who did
// it (an operator, a tool); every node where a lock was removed records it
// with the time for 24 hours (node.ForcedRecordTTL), and Inspect shows the
// record; a name no node held leaves nothing behind. It reports on how many
// nodes a lock was removed.
//
// The force reaches the nodes one by one, so it runs in two steps. First it
// removes the lock on every node and leaves a tombstone that refuses all
// acquisitions; then it waits the attempt timeout (quorum.WithAttemptTimeout), so
// that every acquisition attempt under way when the force began has ended,
// removes the tombstones and wakes the waiters. A waiter thus never wins a
// node that the force takes away afterwards (with a plain delete-and-wake
// per node, a waiter woken early could be left holding less than a
// quorum). Give the operator's client an attempt
// timeout at least as long as the services'. The tombstones expire by
// themselves if this client goes away between the steps.
//
// by is at most MaxBy bytes of printable text (no control character).
func (t *Tools) ForceUnlock(ctx context.Context, name, by string) (int, error) {
	return t.ForceUnlockVia(ctx, name, by, "")
}

// MaxBy is the longest by ForceUnlock records, in bytes.
const MaxBy = 256

// ForceUnlockVia is ForceUnlock that also records where the force came from
// as the tool knows it (via, e.g. "console 10.0.0.5:51234"), apart from by,
// which is what the operator typed (node.Forced.Via and By).
func (t *Tools) ForceUnlockVia(ctx context.Context, name, by, via string) (int, error) {
	if name == "" {
		return 0, errors.New("quorumlock: empty lock name")
	}
	if err := CheckBy(by); err != nil {
		return 0, err
	}
	settle := t.cfg.AttemptTimeout
	hold := settle + 2*t.cfg.ReleaseTimeout + time.Second
	removed := make([]bool, len(t.nodes))
	// each runs f on every node under the release timeout; a node's error
	// is kept from the first step that failed there.
	errs := make([]error, len(t.nodes))
	each := func(ctx context.Context, f func(ctx context.Context, i int, n *inode.Node) error) {
		for i, err := range fanout.All(len(t.nodes), func(i int) error {
			cctx, cancel := context.WithTimeout(ctx, t.cfg.ReleaseTimeout)
			defer cancel()
			return f(cctx, i, t.nodes[i])
		}) {
			if err != nil && errs[i] == nil {
				errs[i] = &multilock.NodeError{Node: t.nodes[i].Name(), Err: err}
			}
		}
	}
	each(ctx, func(ctx context.Context, i int, n *inode.Node) error {
		var err error
		removed[i], err = n.ForceRelease(ctx, name, inode.Force{By: by, Via: via, Hold: hold})
		return err
	})
	// Not cut short by ctx: ending the tombstones early is what must not
	// happen, and step two should run even for a caller that gave up.
	time.Sleep(settle)
	each(context.WithoutCancel(ctx), func(ctx context.Context, _ int, n *inode.Node) error { return n.FinishForce(ctx, name) })
	count := 0
	for _, r := range removed {
		if r {
			count++
		}
	}
	return count, oneline.Join(errs...)
}

// CheckBy says what is wrong with a force-unlock's by: empty, longer than
// MaxBy bytes, or holding a control character (which could rewrite an
// operator's terminal, or pass for the record's own fields).
func CheckBy(by string) error {
	switch {
	case strings.TrimSpace(by) == "":
		return errors.New("quorumlock: ForceUnlock needs who does it (by), e.g. an operator's login; it is recorded next to the lock")
	case len(by) > MaxBy:
		return fmt.Errorf("quorumlock: ForceUnlock's by is %d bytes, above the limit of %d: give a login or a short name", len(by), MaxBy)
	case !utf8.ValidString(by) || strings.ContainsFunc(by, unicode.IsControl):
		return fmt.Errorf("quorumlock: ForceUnlock's by %s holds a control character or invalid UTF-8: give printable text", strconv.Quote(by))
	}
	return nil
}
