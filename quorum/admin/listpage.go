package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/quorumlock/quorumlock/internal/fanout"
	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/multilock"
)

// Page is one page of a listing by ListPage.
type Page struct {
	// Locks are at most the limit's inspections, sorted by name within the
	// page (pages follow the nodes' SCAN order, not the names').
	Locks []Inspection
	// Next is the cursor of the next page, "" when the walk is done. A
	// page that ends exactly where the key space does still has a Next,
	// whose page comes back empty.
	Next string
}

// scanStep is how many keys each SCAN step asks a node for. It is fixed,
// not the page's limit: a cursor resumes inside a step by asking for the
// same step again, which gives the same keys only with the same count.
const scanStep = 256

// ListPage lists the locks whose names match the glob pattern, as List
// does, a page at a time: at most limit inspections, and the cursor of the
// next page in Page.Next ("" to start, "" again when done). Its memory and
// each call's time grow with limit (and, for a pattern few names match,
// with the keys SCAN walks past to fill the page), never with the whole key
// space.
//
// The walk visits the nodes one after another in the client's order, each
// with its SCAN cursor (every master of a Cluster client in turn), and lists
// a name on the first node in that order that has its key: a name held on
// any node is listed. Like SCAN itself, the walk promises this only for
// names that stay put while it runs: a name taken or released meanwhile may
// be missed or come back on a later page. A name may also come back while a
// node's table is resized (SCAN may then return a key twice), and when an
// earlier node does not answer whether it has the name's key: a caller
// that needs each name once keeps the names it has seen.
// A node whose SCAN fails is skipped for the rest of the walk (the
// names only it holds are not listed) and named in the returned error as a
// *multilock.NodeError, with the page still returned; so is a node that
// did not answer this page's inspections (its NodeState.Err is set).
//
// The cursor is opaque text, valid across processes with the same nodes in
// the same order and the same pattern; a malformed one is an error.
func (t *Tools) ListPage(ctx context.Context, pattern, cursor string, limit int) (Page, error) {
	if limit < 1 {
		return Page{}, fmt.Errorf("quorumlock: list limit %d: give at least 1", limit)
	}
	if len(t.nodes) > maxListNodes {
		return Page{}, errManyNodes
	}
	pos, err := parseCursor(cursor, len(t.nodes))
	if err != nil {
		return Page{}, err
	}
	errs := make([]error, len(t.nodes))
	locks, pos := t.walk(ctx, pattern, pos, limit, errs)
	p := Page{Locks: locks}
	if pos.node < len(t.nodes) {
		p.Next = pos.String()
	}
	return p, t.nodeErrors(errs)
}

// nodeErrors joins the errors of a slot per node, each as a
// *multilock.NodeError.
func (t *Tools) nodeErrors(errs []error) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		if e != nil {
			out[i] = &multilock.NodeError{Node: t.nodes[i].Name(), Err: e}
		}
	}
	return oneline.Join(out...)
}

// walk lists from pos until it has limit inspections or the nodes are
// done, and returns them, sorted by name, with where it stopped. errs has
// a slot per node: a node's first error goes there (ctx's error too, when
// ctx ends the walk), and a node with an
// error is not asked again within this walk (its NodeState.Err is that
// error), so a frozen node costs one timeout, not one per step. A ctx that
// ends stops the walk where it is.
func (t *Tools) walk(ctx context.Context, pattern string, pos position, limit int, errs []error) ([]Inspection, position) {
	var locks []Inspection
	for pos.node < len(t.nodes) && len(locks) < limit {
		sctx, cancel := context.WithTimeout(ctx, inspectNodeTimeout)
		names, next, shards, err := t.nodes[pos.node].ScanStep(sctx, pattern, pos.shard, pos.scan, scanStep)
		cancel()
		if err != nil {
			errs[pos.node] = err
			if ctx.Err() != nil {
				break // resume at this step
			}
			pos = position{node: pos.node + 1, skipped: pos.skipped | 1<<pos.node}
			continue
		}
		if pos.after != "" { // resume inside the step where the last page stopped
			i, found := slices.BinarySearch(names, pos.after)
			if found {
				i++
			}
			names = names[i:]
		}
		for len(names) > 0 && len(locks) < limit {
			batch := names[:min(len(names), limit-len(locks))]
			names = names[len(batch):]
			pos.after = batch[len(batch)-1]
			batch = t.notListedYet(ctx, batch, pos, errs)
			if len(batch) == 0 {
				continue
			}
			for _, in := range t.inspectKnown(ctx, batch, errs) {
				// A name found by the scan may be gone by the time it is
				// read (released, expired, or only a force-unlock's
				// tombstone): leave out what is free.
				if in.Verdict != Free {
					locks = append(locks, in)
				}
			}
		}
		if len(names) > 0 {
			break // the page is full inside this step
		}
		pos.after = ""
		switch {
		case next != 0:
			pos.scan = next
		case pos.shard+1 < shards:
			pos.shard, pos.scan = pos.shard+1, 0
		default:
			pos = position{node: pos.node + 1, skipped: pos.skipped}
		}
	}
	slices.SortFunc(locks, func(a, b Inspection) int { return strings.Compare(a.Name, b.Name) })
	return locks, pos
}

// notListedYet is the names of batch, found on node pos.node, whose lock
// key is on none of the nodes walked before it: the others were listed
// there. A key is asked for by a pipelined EXISTS, far cheaper than
// inspecting a name again on every node. A node whose SCAN failed earlier
// in the walk listed nothing and is not asked; one that does not answer
// now has its error put in errs and lists nothing (so a name may come
// twice, never be lost).
func (t *Tools) notListedYet(ctx context.Context, batch []string, pos position, errs []error) []string {
	if pos.node == 0 {
		return batch
	}
	seen := make([][]bool, pos.node)
	failed := fanout.All(pos.node, func(i int) error {
		if errs[i] != nil || pos.skipped&(1<<i) != 0 {
			return nil
		}
		nctx, cancel := context.WithTimeout(ctx, inspectNodeTimeout)
		defer cancel()
		var err error
		seen[i], err = t.nodes[i].Exist(nctx, batch)
		return err
	})
	for i, e := range failed {
		if e != nil {
			errs[i] = e
		}
	}
	var out []string
next:
	for j, name := range batch {
		for _, s := range seen {
			if s != nil && s[j] {
				continue next
			}
		}
		out = append(out, name)
	}
	return out
}

// position is where a walk stands: on node node, its shard shard, at SCAN
// cursor scan, past the name after inside that step ("" for none), with
// the nodes whose SCAN failed as bits of skipped.
type position struct {
	node, shard int
	scan        uint64
	after       string
	skipped     uint64
}

// cursorVersion starts every cursor, so a later form can tell an old one.
const cursorVersion = "1"

func (p position) String() string {
	s := strings.Join([]string{cursorVersion, strconv.Itoa(p.node), strconv.Itoa(p.shard),
		strconv.FormatUint(p.scan, 10), strconv.FormatUint(p.skipped, 16), p.after}, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// maxListNodes is how many nodes a walk can mark as skipped in its cursor.
const maxListNodes = 64

var errManyNodes = fmt.Errorf("quorumlock: a listing walks at most %d nodes", maxListNodes)

// ErrCursor is ListPage's error for a cursor that is not a Page.Next.
var ErrCursor = errors.New("quorumlock: list cursor is malformed: pass Page.Next as it came, or \"\" to start over")

func parseCursor(c string, nodes int) (position, error) {
	if c == "" {
		return position{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return position{}, ErrCursor
	}
	f := strings.SplitN(string(b), ".", 6)
	if len(f) != 6 || f[0] != cursorVersion {
		return position{}, ErrCursor
	}
	var p position
	var e [4]error
	p.node, e[0] = strconv.Atoi(f[1])
	p.shard, e[1] = strconv.Atoi(f[2])
	p.scan, e[2] = strconv.ParseUint(f[3], 10, 64)
	p.skipped, e[3] = strconv.ParseUint(f[4], 16, 64)
	p.after = f[5]
	if errors.Join(e[:]...) != nil || p.node < 0 || p.node >= nodes || p.shard < 0 {
		return position{}, ErrCursor
	}
	return p, nil
}
