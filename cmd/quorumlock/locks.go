package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/internal/safetext"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

func init() {
	register(&command{
		name:    "locks",
		summary: "list the locks on the nodes with holder, TTL, fence and verdict (SCAN, never KEYS)",
		run:     runLocks,
	})
}

func runLocks(ctx context.Context, args []string, out io.Writer) error {
	fs := flags("locks", "list the locks on the nodes with holder, TTL, fence and verdict (SCAN, never KEYS)", out)
	nodes := nodesFlag(fs)
	match := fs.String("match", "*", "glob of lock names to list, e.g. 'orders/*'")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	limit := fs.Int("limit", 1000, "list at most this many locks, then print the --cursor of the rest; 0 lists them all (still a page at a time)")
	cursor := fs.String("cursor", "", "continue a listing where the one that printed this cursor stopped (same --nodes and --match)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q (use --match to filter)", errUsage, fs.Args())
	}
	if err := checkPattern(*match); err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit %d: give 0 for all, or how many locks to list", errUsage, *limit)
	}
	c, err := dialNodes(*nodes)
	if err != nil {
		return err
	}
	defer c.Close()
	n := len(c.Admin().Nodes())
	// Pages of at most listPage locks are printed as they come, so memory
	// stays bounded by a page whatever --limit is.
	var (
		failed           = map[string]*quorum.NodeError{}
		unknown          []string // the first few
		unknowns, listed int
		next             = *cursor
		tw               *tabwriter.Writer
		jsonOpen         bool
	)
	for {
		size := listPage
		if *limit > 0 {
			size = min(size, *limit-listed)
		}
		page, lerr := c.Admin().ListPage(ctx, *match, next, size)
		if errors.Is(lerr, admin.ErrCursor) {
			return fmt.Errorf("%w: --cursor %s is not a cursor this command printed: copy it whole, or leave it out to start over", errUsage, safetext.Quote(next))
		}
		for _, ne := range nodeErrors(lerr) {
			if failed[ne.Node] == nil {
				failed[ne.Node] = ne
			}
		}
		listed += len(page.Locks)
		for _, in := range page.Locks {
			if in.Verdict == admin.Unknown {
				if unknowns++; len(unknown) < 10 {
					unknown = append(unknown, in.Name)
				}
			}
		}
		switch {
		case *asJSON:
			// Node errors are in each node's "error". One array, written a
			// page at a time.
			for _, j := range jsonInspections(page.Locks) {
				b, err := json.MarshalIndent(j, "  ", "  ")
				if err != nil {
					return err
				}
				sep := ",\n  "
				if !jsonOpen {
					sep, jsonOpen = "[\n  ", true
				}
				fmt.Fprint(out, sep)
				out.Write(b)
			}
		case len(page.Locks) > 0:
			if tw == nil {
				tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "LOCK\tVERDICT\tHOLDER\tHOLDS\tTTL\tFENCE\tNODES\t")
			}
			for _, in := range page.Locks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", safetext.Quote(in.Name), in.Verdict, orDash(holderNames(in)),
					orDash(holds(in)), orDash(ttl(in.TTL)), orDash(fence(in.Fence)), nodeMarks(in))
			}
			tw.Flush()
		}
		next = page.Next
		if ctx.Err() != nil { // interrupted: the walk would not move on
			return fmt.Errorf("interrupted after %d lock(s); --cursor %s continues from there", listed, next)
		}
		if next == "" || (*limit > 0 && listed >= *limit) {
			break
		}
	}
	silent := slices.SortedFunc(maps.Values(failed), func(a, b *quorum.NodeError) int { return strings.Compare(a.Node, b.Node) })
	switch {
	case *asJSON && jsonOpen:
		fmt.Fprintln(out, "\n]")
	case *asJSON:
		fmt.Fprintln(out, "[]")
	case listed == 0 && next == "":
		fmt.Fprintf(out, "no lock matches %q on %d nodes (%d answered)\n", *match, n, n-len(silent))
	case next == "":
		fmt.Fprintf(out, "\n%d lock(s) on %d nodes; an owner needs %d. NODES: H holds for the holder, x another owner (leftover), . absent, ? no answer\n",
			listed, n, majority(n))
	default:
		fmt.Fprintf(out, "\n%d lock(s) on %d nodes, and more may match; an owner needs %d. NODES: H holds for the holder, x another owner (leftover), . absent, ? no answer\n",
			listed, n, majority(n))
	}
	if next != "" {
		// On stderr, so that --json's output stays one JSON value.
		fmt.Fprintf(stderr, "quorumlock locks: listed %d; for the next page add --cursor %s (or --limit 0 for all)\n", listed, next)
	}
	if answered := n - len(silent); answered < majority(n) {
		return untrusted("the list", answered, n, majority(n), silent)
	}
	if unknowns > 0 {
		what := safetext.List(unknown, ", ")
		if unknowns > len(unknown) {
			what += fmt.Sprintf(" and %d more", unknowns-len(unknown))
		}
		return untrusted("the verdict on "+what, n-len(silent), n, majority(n), silent)
	}
	if len(silent) > 0 {
		fmt.Fprintf(stderr, "quorumlock locks: warning: %d of %d nodes did not answer (a quorum did, so the list holds; verdicts count the silent nodes as unknown)%s\n",
			len(silent), n, silentNodes(silent))
	}
	return nil
}

// listPage is how many locks locks reads from the nodes at a time.
const listPage = 500

// checkPattern refuses a --match glob that is malformed (an unclosed
// "[", a trailing "\\"): Redis would not say so, it would just match
// nothing or the wrong names.
func checkPattern(p string) error {
	if p == "" {
		return fmt.Errorf("%w: --match is empty: give a glob such as 'orders/*', or leave it out for all locks", errUsage)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%w: --match %q is not a valid glob (%v): close every [ with ], escape a literal [ as \\[", errUsage, p, err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fence(f int64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatInt(f, 10)
}

// holds is the holder's hold count (the highest among the nodes holding it).
func holds(in admin.Inspection) string {
	var n int64
	for _, s := range in.Nodes {
		for _, h := range in.Holders {
			n = max(n, s.Holders[h])
		}
	}
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// ttl formats a remaining time for people: 9.0s, 350ms, 2m5s.
func ttl(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		return d.Truncate(time.Second).String()
	}
}

// nodeMarks is one character per node: H holds for the holder, x another
// owner, . absent, ? no answer.
func nodeMarks(in admin.Inspection) string {
	var b strings.Builder
	for _, s := range in.Nodes {
		switch {
		case !s.Answered():
			b.WriteByte('?')
		case !s.Present:
			b.WriteByte('.')
		case holdsFor(s, in.Holders):
			b.WriteByte('H')
		default:
			b.WriteByte('x')
		}
	}
	return b.String()
}

func holdsFor(s admin.NodeState, owners []string) bool {
	for _, o := range owners {
		if _, ok := s.Holders[o]; ok {
			return true
		}
	}
	return false
}

// JSON forms (errors as strings, durations in milliseconds).
type jsonNode struct {
	Node    string           `json:"node"`
	Present bool             `json:"present"`
	Holders map[string]int64 `json:"holders,omitempty"`
	Mode    string           `json:"mode,omitempty"`
	TTLms   int64            `json:"ttl_ms"`
	Fence   int64            `json:"fence"`
	Error   string           `json:"error,omitempty"`
}

type jsonForced struct {
	By      string    `json:"by"`
	Via     string    `json:"via,omitempty"`
	At      time.Time `json:"at"`
	Removed bool      `json:"removed"`
}

type jsonInspection struct {
	Name    string   `json:"name"`
	Verdict string   `json:"verdict"`
	Holders []string `json:"holders"`
	// Labels are the holders' labels (admin.Inspection.Label), in the same order.
	Labels   []string    `json:"holder_labels"`
	Mode     string      `json:"mode,omitempty"`
	TTLms    int64       `json:"ttl_ms"`
	Fence    int64       `json:"fence"`
	Quorum   int         `json:"quorum"`
	Answered int         `json:"answered"`
	Forced   *jsonForced `json:"forced,omitempty"`
	Nodes    []jsonNode  `json:"nodes"`
}

func jsonInspections(list []admin.Inspection) []jsonInspection {
	out := make([]jsonInspection, 0, len(list))
	for _, in := range list {
		j := jsonInspection{Name: in.Name, Verdict: string(in.Verdict), Holders: in.Holders, Mode: in.Mode,
			TTLms: in.TTL.Milliseconds(), Fence: in.Fence, Quorum: in.Quorum, Answered: in.Answered}
		if j.Holders == nil {
			j.Holders = []string{}
		}
		j.Labels = make([]string, len(j.Holders))
		for i, h := range j.Holders {
			j.Labels[i] = in.Label(h)
		}
		if f := in.Forced; f != nil {
			j.Forced = &jsonForced{By: f.By, Via: f.Via, At: f.At, Removed: f.Removed}
		}
		for _, s := range in.Nodes {
			n := jsonNode{Node: s.Node, Present: s.Present, Mode: s.Mode, TTLms: s.TTL.Milliseconds(), Fence: s.Fence}
			if len(s.Holders) > 0 {
				n.Holders = s.Holders
			}
			if s.Err != nil {
				n.Error = s.Err.Error()
			}
			j.Nodes = append(j.Nodes, n)
		}
		out = append(out, j)
	}
	return out
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
