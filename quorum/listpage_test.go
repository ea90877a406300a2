package quorum

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// Names spread over 3 nodes, some held by a quorum, some on one or two
// nodes only, walked a few at a time: every page within its limit, and
// every name listed once across the pages.
func TestListPage(t *testing.T) {
	servers, clients := cluster(t, 3)
	c := newClient(t, clients, WithTTL(30*time.Second))
	ctx := t.Context()
	t.Cleanup(func() { resumeAll(servers) })

	want := map[string]admin.Verdict{}
	add := func(prefix string, count int, v admin.Verdict, nodes ...int) {
		for i := range count {
			name := fmt.Sprintf("p/%s/%02d", prefix, i)
			leftover(t, c, name, "owner-"+prefix, 30*time.Second, nodes...)
			want[name] = v
		}
	}
	add("all", 30, admin.HeldByQuorum, 0, 1, 2)
	add("n0", 10, admin.MinorityOnly, 0)
	add("n1", 10, admin.MinorityOnly, 1)
	add("n2", 10, admin.MinorityOnly, 2)
	add("n12", 10, admin.HeldByQuorum, 1, 2)
	// Only a force-unlock's tombstone on node 0, held on nodes 1 and 2:
	// node 0's walk lists it (its key is there), node 1's does not again.
	for i := range 5 {
		name := fmt.Sprintf("p/tomb/%02d", i)
		if _, err := c.nodes[0].ForceRelease(ctx, name, node.Force{By: "ops", Hold: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		leftover(t, c, name, "owner-tomb", 30*time.Second, 1, 2)
		want[name] = admin.HeldByQuorum
	}
	leftover(t, c, "other", "o", 30*time.Second, 0, 1, 2) // outside the pattern
	// Unrelated keys make node 1's walk take several SCAN steps.
	for i := range 2000 {
		clients[1].Set(ctx, fmt.Sprint("filler:", i), 1, time.Minute)
	}

	walk := func(t *testing.T, limit int) (map[string]admin.Verdict, int, error) {
		t.Helper()
		got := map[string]admin.Verdict{}
		repeats := 0
		cursor, pages := "", 0
		var errs []error
		for {
			p, err := c.Admin().ListPage(ctx, "p/*", cursor, limit)
			errs = append(errs, err)
			pages++
			if len(p.Locks) > limit {
				t.Fatalf("page %d has %d locks, over the limit %d", pages, len(p.Locks), limit)
			}
			if !slices.IsSortedFunc(p.Locks, func(a, b admin.Inspection) int { return strings.Compare(a.Name, b.Name) }) {
				t.Fatalf("page %d is not sorted", pages)
			}
			for _, in := range p.Locks {
				if _, dup := got[in.Name]; dup {
					// SCAN may return a key twice while a node's table
					// is rehashing; a walk that loses its place within a
					// SCAN step repeats on nearly every page.
					repeats++
					if repeats > len(want)/4 {
						t.Fatalf("%d names listed twice (the last %q, page %d)", repeats, in.Name, pages)
					}
				}
				got[in.Name] = in.Verdict
			}
			if p.Next == "" {
				return got, pages, errors.Join(errs...)
			}
			if pages > 1000 {
				t.Fatal("the walk does not end")
			}
			cursor = p.Next
		}
	}

	for _, limit := range []int{1, 7, 1000} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			got, pages, err := walk(t, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("listed %d names, want %d: %v", len(got), len(want), got)
			}
			if minPages := len(want) / limit; pages < minPages {
				t.Fatalf("%d pages of at most %d for %d names", pages, limit, len(want))
			}
		})
	}

	t.Run("List agrees", func(t *testing.T) {
		list, err := c.Admin().List(ctx, "p/*")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]admin.Verdict{}
		for _, in := range list {
			got[in.Name] = in.Verdict
		}
		if len(list) != len(want) || !maps.Equal(got, want) {
			t.Fatalf("List: %d names, want %d", len(list), len(want))
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		if _, err := c.Admin().ListPage(ctx, "*", "", 0); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("limit 0: %v", err)
		}
		for _, bad := range []string{"x", "!!", "MS4wLjA"} {
			_, err := c.Admin().ListPage(ctx, "*", bad, 10)
			if err == nil || !strings.HasPrefix(err.Error(), "quorumlock: list cursor") {
				t.Fatalf("cursor %q: %v", bad, err)
			}
		}
	})

	t.Run("a node does not answer", func(t *testing.T) {
		if err := servers[0].Pause(); err != nil {
			t.Fatal(err)
		}
		defer servers[0].Resume()
		got, _, err := walk(t, 40)
		var ne *multilock.NodeError
		if !errors.As(err, &ne) || ne.Node != c.nodes[0].Name() {
			t.Fatalf("error %v, want a NodeError for %s", err, c.nodes[0].Name())
		}
		// What only node 0 holds is not listed; everything else is, once,
		// with the silent node counted as unknown where it could matter.
		for name := range want {
			_, listed := got[name]
			if listed == strings.HasPrefix(name, "p/n0/") {
				t.Fatalf("%q listed %v with node 0 silent", name, listed)
			}
		}
	})
}
