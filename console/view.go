package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/oneline"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// pageData is what the page shows (page.go).
type pageData struct {
	Nodes     []string
	Quorum    int // 0 when no lock was seen to tell
	Pattern   string
	RefreshMS int64
	LiveURL   string // what the page fetches to refresh itself
	APIURL    string // the same as JSON
	Name      string // the ?name= asked for
	Cols      int
	FormKey   string
	Updated   string
	Locks     []lockRow
	Cursor    string // the ?cursor= of this page, "" for the first
	Next      string // the cursor of the next page, "" on the last
	ListErr   string
	Detail    *lockRow // ?name=: one lock in full, also when free
	Flash     string
	at        time.Time
}

type lockRow struct {
	Name     string `json:"name"`
	Verdict  string `json:"verdict"`             // held, minority, free, unknown
	Summary  string `json:"summary"`             // one line for people
	Holder   string `json:"holder,omitempty"`    // the holder's label (admin.Inspection.Label)
	HolderID string `json:"holder_id,omitempty"` // the holder's full owner string
	// HeldFor is how long this console has seen the current holder hold
	// it, "≥ …" when the holder was there at the console's first look.
	HeldFor   string    `json:"held_for,omitempty"`
	HeldSince time.Time `json:"held_since,omitzero"`
	// Waiters is the length of a fair lock's line (0 for a plain lock).
	Waiters int    `json:"waiters"`
	Holds   int64  `json:"holds,omitempty"`
	TTL     string `json:"ttl,omitempty"`
	TTLms   int64  `json:"ttl_ms"`
	Fence   int64  `json:"fence,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Leader and Term: an election's (a lock named quorum.ElectionPrefix +
	// its name) current leader value and term, read from a quorum.
	Leader      string `json:"leader,omitempty"`
	Term        int64  `json:"term,omitempty"`
	Forced      string `json:"forced,omitempty"`     // who force-unlocked it and when, in full
	ForcedBy    string `json:"forced_by,omitempty"`  // who, as the operator typed it
	ForcedVia   string `json:"forced_via,omitempty"` // where from, as the tool knew it (e.g. "console ADDR")
	ForcedShort string `json:"-"`                    // the same, short, with its age
	Cells       []cell `json:"nodes"`
}

// cell is one node's view of one lock: a TTL bar and a label.
type cell struct {
	Node    string  `json:"node"`
	Class   string  `json:"state"` // holder, other, absent, silent
	Pct     float64 `json:"-"`
	Label   string  `json:"ttl,omitempty"`
	Err     string  `json:"error,omitempty"`
	Owner   string  `json:"owner,omitempty"`    // the label (admin.Inspection.Label)
	OwnerID string  `json:"owner_id,omitempty"` // the full owner
	Holds   int64   `json:"holds,omitempty"`
	Fence   int64   `json:"fence,omitempty"`
	Mode    string  `json:"mode,omitempty"`
}

var errForeignCursor = errors.New("quorumlock: the address's cursor is not one this console gave: showing the first page")

func (s *Console) view(r *http.Request) pageData {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	q := r.URL.Query()
	now := time.Now()
	d := pageData{
		Pattern:   s.cfg.pattern,
		RefreshMS: s.cfg.refresh.Milliseconds(),
		FormKey:   s.formKey,
		Updated:   now.Format("15:04:05"),
		Flash:     s.flash.open(q.Get("flash")),
		Name:      q.Get("name"),
		at:        now,
	}
	d.Cursor = q.Get("cursor")
	lq := url.Values{}
	if d.Name != "" {
		lq.Set("name", d.Name)
	}
	if d.Cursor != "" {
		lq.Set("cursor", d.Cursor)
	}
	d.LiveURL = "locks?" + lq.Encode()
	d.APIURL = "api/locks?" + lq.Encode()
	d.Nodes = s.c.Admin().Nodes()
	d.Cols = 9 + len(d.Nodes)
	// One page of at most the limit: the page's cost does not grow with
	// the number of names on the nodes.
	page, err := s.c.Admin().ListPage(ctx, s.cfg.pattern, d.Cursor, s.cfg.limit)
	if errors.Is(err, admin.ErrCursor) {
		d.Cursor = ""
		page, err = s.c.Admin().ListPage(ctx, s.cfg.pattern, "", s.cfg.limit)
		err = oneline.Join(errForeignCursor, err)
	}
	if err != nil {
		d.ListErr = err.Error()
	}
	list := page.Locks
	d.Next = page.Next
	var detail *admin.Inspection
	if name := d.Name; name != "" {
		if i := slices.IndexFunc(list, func(in admin.Inspection) bool { return in.Name == name }); i >= 0 {
			detail = &list[i]
		} else if in, err := s.c.Admin().Inspect(ctx, name); err == nil {
			detail = &in
		}
	}
	// Bars share one scale: the client's TTL, or a longer TTL seen.
	scale := s.c.Admin().TTL()
	for _, in := range list {
		for _, ns := range in.Nodes {
			scale = max(scale, ns.TTL)
		}
	}
	if len(list) > 0 {
		d.Quorum = list[0].Quorum
	} else if detail != nil {
		d.Quorum = detail.Quorum
	}
	full := d.Cursor == "" && d.Next == ""
	names := make([]string, len(list))
	for i, in := range list {
		names[i] = in.Name
	}
	queued, _ := s.c.Admin().Queued(ctx, names...) // a silent node is already in ListErr
	seen := map[string]bool{}
	for i, in := range list {
		lr := row(in, scale)
		if i < len(queued) {
			lr.Waiters = queued[i]
		}
		s.held(&lr, in, now, seen)
		s.leader(ctx, &lr)
		d.Locks = append(d.Locks, lr)
	}
	if full && err == nil {
		s.seen.forget(seen)
	}
	if detail != nil {
		r := row(*detail, scale)
		if q, err := s.c.Admin().Queued(ctx, detail.Name); err == nil {
			r.Waiters = q[0]
		}
		s.held(&r, *detail, now, map[string]bool{})
		s.leader(ctx, &r)
		d.Detail = &r
	}
	return d
}

// held fills in how long the console has seen the holder hold the lock.
func (s *Console) held(lr *lockRow, in admin.Inspection, now time.Time, seen map[string]bool) {
	if in.Verdict != admin.HeldByQuorum {
		return
	}
	since, bound := s.seen.observe(now, seen, in.Name+"\x00"+strings.Join(in.Holders, ","))
	lr.HeldSince = since
	lr.HeldFor = age(now.Sub(since))
	if bound {
		lr.HeldFor = "≥ " + lr.HeldFor
	}
}

// leader shows an election's leader and term in place of its holder.
func (s *Console) leader(ctx context.Context, lr *lockRow) {
	name, ok := strings.CutPrefix(lr.Name, quorum.ElectionPrefix)
	if !ok || lr.Verdict != string(admin.HeldByQuorum) {
		return
	}
	e, err := s.c.Election(name)
	if err != nil {
		return
	}
	info, err := e.Leader(ctx)
	if err != nil {
		return // being elected, or resigning: the lock row says enough
	}
	lr.Leader, lr.Term = info.Value, info.Token
	lr.Holder = fmt.Sprintf("%s (leader, term %d)", info.Value, info.Token)
	lr.Summary = fmt.Sprintf("election %q: leader %q, term %d", name, info.Value, info.Token)
}

func row(in admin.Inspection, scale time.Duration) lockRow {
	lr := lockRow{Name: in.Name, Verdict: string(in.Verdict), Fence: in.Fence, Mode: in.Mode}
	holders := map[string]bool{}
	for _, h := range in.Holders {
		holders[h] = true
	}
	if len(in.Holders) > 0 {
		lr.Holder, lr.HolderID = in.Label(in.Holders[0]), strings.Join(in.Holders, ", ")
		if len(in.Holders) > 1 {
			lr.Holder = fmt.Sprintf("%s +%d", lr.Holder, len(in.Holders)-1)
		}
	}
	if in.TTL > 0 {
		lr.TTL, lr.TTLms = dur(in.TTL), in.TTL.Milliseconds()
	}
	switch in.Verdict {
	case admin.HeldByQuorum:
		lr.Summary = fmt.Sprintf("held by a quorum (%d of %d nodes needed)", in.Quorum, len(in.Nodes))
	case admin.MinorityOnly:
		lr.Summary = "leftovers on a minority of nodes: they block nobody and expire with their TTL"
	case admin.Free:
		lr.Summary = "free"
	case admin.Unknown:
		lr.Summary = fmt.Sprintf("unknown: only %d of %d nodes answered", in.Answered, len(in.Nodes))
	}
	if f := in.Forced; f != nil {
		lr.Forced = fmt.Sprintf("force-unlocked by %s at %s", strconv.Quote(f.By), f.At.Format("2006-01-02 15:04:05 MST"))
		if f.Via != "" {
			lr.Forced += " via " + f.Via
		}
		lr.ForcedBy, lr.ForcedVia = f.By, f.Via
		lr.ForcedShort = fmt.Sprintf("forced by %s %s ago", strconv.Quote(f.By), age(time.Since(f.At)))
	}
	for _, ns := range in.Nodes {
		c := cell{Node: ns.Node, Fence: ns.Fence, Mode: ns.Mode}
		switch {
		case !ns.Answered():
			c.Class, c.Label, c.Err = "silent", "no answer", ns.Err.Error()
		case !ns.Present:
			c.Class, c.Label = "absent", "—"
		default:
			c.Class = "other"
			for o, k := range ns.Holders {
				if holders[o] {
					c.Class = "holder"
				}
				if c.OwnerID == "" || holders[o] {
					c.OwnerID, c.Holds = o, k
				}
			}
			c.Owner = in.Label(c.OwnerID)
			if holders[c.OwnerID] {
				lr.Holds = max(lr.Holds, c.Holds)
			}
			c.Label = dur(ns.TTL)
			if scale > 0 {
				c.Pct = min(100, 100*float64(ns.TTL)/float64(scale))
			}
		}
		lr.Cells = append(lr.Cells, c)
	}
	return lr
}

// age formats how long ago something happened: 5s, 3m, 2h.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(max(0, int(d.Seconds()))) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	default:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
}

// dur formats a TTL for people: 8.2s, 350ms, 2m05s.
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		return d.Truncate(time.Second).String()
	}
}
