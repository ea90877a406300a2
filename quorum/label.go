package quorum

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// WithLabel sets the human label of this client, so that operators
// (quorumlock locks, inspect, the console) see who holds a lock:
// "billing-worker-3" rather than a bare id. The label is for people only:
// each owner the client makes is its own random id and a counter, and the
// client records the label once per node next to its locks (renewed while
// it locks; admin.Inspection.Label reads it back), so it costs no bytes in
// a held lock. It must not contain a NUL byte; at most 100 bytes. Default
// "host:pid" of this process; "" records none. Owners given with WithOwner
// are used as they are.
func WithLabel(label string) Option {
	return func(c *config) { c.onlyClient("WithLabel"); c.label, c.labelSet = label, true }
}

// ownerSep separated the label from the client's UUID in the owners of
// earlier versions ("label#uuid:seq"); admin.OwnerLabel still reads them.
const ownerSep = admin.OwnerSep

// labelTTL is how long a node keeps a client's label without renewal;
// labelRenew how often a client that keeps locking renews it.
const (
	labelTTL   = 24 * time.Hour
	labelRenew = time.Hour
)

// defaultLabel is host:pid.
func defaultLabel() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown-host"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// clientLabel is the label the client records: WithLabel's, else host:pid.
func clientLabel(cfg config) (string, error) {
	label := cfg.label
	if !cfg.labelSet {
		label = defaultLabel()
	}
	if strings.ContainsRune(label, 0) {
		return "", errors.New("quorumlock: WithLabel: the label must not contain a NUL byte")
	}
	if len(label) > 100 {
		return "", errors.New("quorumlock: WithLabel: the label is longer than 100 bytes; use a short name such as the service and instance")
	}
	return label, nil
}

// newClientID is the prefix of the owners a client makes: 16 characters
// of base64url, 96 random bits. Short on purpose: an owner is id:seq and an
// attempt id:seq.n, and the fast path's value is the attempt id alone
// (node.FastValue), which then stays within Redis's 44-byte embedded
// strings (28 bytes and less keeps a held lock within 1.2× a bare SET NX
// lock's memory; see docs/performance.md). 96 bits make two clients with
// one id as likely as 2^-33 among 2^32 clients.
func newClientID(src *lockedRand) string {
	var b [12]byte
	if src != nil {
		src.read(b[:])
	} else {
		_, _ = rand.Read(b[:]) // never fails (it crashes the program instead)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// recordLabel records the client's label on every node (node.SetLabel),
// bounded by ctx; a node that does not answer keeps the id only. A client
// records it when it first gets a lease, not in New: a client that only
// inspects (the CLI's locks, the console) leaves nothing behind.
func (c *Client) recordLabel(ctx context.Context) {
	if c.label == "" {
		return
	}
	fanout.All(len(c.nodes), func(i int) error {
		return c.nodes[i].SetLabel(ctx, c.id, c.label, labelTTL)
	})
}

// renewLabel records the label at the client's first lease and again
// when labelRenew has passed since, in the background (the caller just got
// a lease and is not kept waiting; an operator may see the bare id for
// that round trip).
func (c *Client) renewLabel() {
	due := c.labelDue.Load()
	if c.label == "" || time.Now().UnixNano() < due || !c.labelDue.CompareAndSwap(due, time.Now().Add(labelRenew).UnixNano()) {
		return
	}
	// The caller (track) holds leaseMu, under which Close marks the client
	// closed: this goroutine is counted in wg before Close waits for wg and
	// then removes the label.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
		defer cancel()
		c.recordLabel(ctx)
	}()
}

// dropLabel removes the client's label from every node, bounded by the
// release timeout, if the client recorded one (Close: nothing of a closed
// client stays on the nodes). A node that does not answer keeps it until
// its expiry (labelTTL).
func (c *Client) dropLabel() error {
	if c.label == "" || c.labelDue.Load() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout)
	defer cancel()
	errs := fanout.All(len(c.nodes), func(i int) error {
		if err := c.nodes[i].DropLabel(ctx, c.id); err != nil {
			return &NodeError{Node: c.nodes[i].Name(), Err: fmt.Errorf("removing the client's label: %w", err)}
		}
		return nil
	})
	return errors.Join(errs...)
}
