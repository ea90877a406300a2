package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// opsNodes starts n redis-server processes and returns their --nodes value
// and a quorum client over them.
func opsNodes(t *testing.T, n int) (string, *quorum.Client) {
	t.Helper()
	servers, clients := testutil.Servers(t, n, localredis.Config{})
	c, err := quorum.New(clients, quorum.WithTTL(10*time.Second), quorum.WithFencing(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return testutil.URLs(servers), c
}

// cli runs a command as main would and returns its exit code, stdout and
// stderr.
func cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestLocksCommand(t *testing.T) {
	spec, c := opsNodes(t, 3)
	ctx := t.Context()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	// A leftover of a failed attempt on one node.
	rc := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(strings.Split(spec, ",")[2], "redis://")})
	defer rc.Close()
	third, err := node.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _, err := third.Lock("jobs/7", "ghost", "a", false).Acquire(ctx, 10*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}

	code, out, stderr := cli("locks", "--nodes", spec)
	if code != 0 {
		t.Fatalf("locks: exit %d: %s", code, stderr)
	}
	t.Logf("\n%s", out)
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "LOCK") {
		t.Fatalf("no table:\n%s", out)
	}
	jobs, orders := strings.Fields(lines[1]), strings.Fields(lines[2])
	if jobs[0] != "jobs/7" || jobs[1] != "minority" || jobs[2] != "-" || jobs[len(jobs)-1] != "..x" {
		t.Fatalf("leftover row: %q", jobs)
	}
	if orders[0] != "orders/42" || orders[1] != "held" || orders[2] != "worker-1" || orders[3] != "1" || strings.Count(orders[len(orders)-1], "H") < 2 {
		t.Fatalf("held row: %q", orders)
	}

	// Fence is the highest counter on the nodes: at least the token (a node
	// that answered after the decision may have made its counter later from
	// its clock).
	code, out, _ = cli("locks", "--nodes", spec, "--match", "orders/*", "--json")
	var got []jsonInspection
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0].Verdict != "held" || got[0].Holders[0] != "worker-1" || got[0].Fence < lease.Token() {
		t.Fatalf("locks --json: exit %d\n%s", code, out)
	}

	if code, out, _ = cli("locks", "--nodes", spec, "--match", "none*"); code != 0 || !strings.Contains(out, "no lock matches") {
		t.Fatalf("empty list: exit %d\n%s", code, out)
	}
	t.Setenv(quorum.EnvNodes, "")
	if code, _, stderr = cli("locks"); code != exitUsage || !strings.Contains(stderr, "QUORUMLOCK_NODES") {
		t.Fatalf("no nodes: exit %d, stderr %q", code, stderr)
	}
}

func TestInspectCommand(t *testing.T) {
	spec, c := opsNodes(t, 3)
	ctx := t.Context()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	t.Setenv(quorum.EnvNodes, spec) // the flag's default
	tests := []struct {
		name string
		args []string
		code int
		want []string // regular expressions
	}{
		{"held", []string{"inspect", "orders/42"}, 0, []string{`orders/42: held by worker-1 \(an owner needs 2 of 3 nodes; 3 answered\)`, `holds\s+worker-1\s+1\s`}},
		{"flags after the name", []string{"inspect", "orders/42", "--json"}, 0, []string{`"verdict": "held"`, `"holders": \[`}},
		{"free", []string{"inspect", "--nodes", spec, "orders/43"}, 0, []string{`orders/43: free \(3 of 3 nodes answered\)`, "absent"}},
		{"no name", []string{"inspect"}, 2, nil},
		{"two names", []string{"inspect", "a", "b"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := cli(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, stderr)
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// --limit stops after that many locks and prints the --cursor that lists
// the rest; following the cursors lists every name once, in the table and
// in JSON.
func TestLocksLimit(t *testing.T) {
	spec, c := opsNodes(t, 3)
	ctx := t.Context()
	want := map[string]bool{}
	for i := range 25 {
		name := fmt.Sprintf("orders/%02d", i)
		lease, err := mustLock(t, c, name).TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lease.Unlock(context.Background()) })
		want[name] = true
	}
	cursorRe := regexp.MustCompile(`--cursor (\S+)`)

	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json ", asJSON), func(t *testing.T) {
			got := map[string]bool{}
			cursor := ""
			for pages := 1; ; pages++ {
				args := []string{"locks", "--nodes", spec, "--match", "orders/*", "--limit", "10"}
				if asJSON {
					args = append(args, "--json")
				}
				if cursor != "" {
					args = append(args, "--cursor", cursor)
				}
				code, out, stderr := cli(args...)
				if code != 0 {
					t.Fatalf("page %d: exit %d: %s", pages, code, stderr)
				}
				var names []string
				if asJSON {
					var list []jsonInspection
					if err := json.Unmarshal([]byte(out), &list); err != nil {
						t.Fatalf("page %d is not JSON: %v\n%s", pages, err, out)
					}
					for _, in := range list {
						names = append(names, in.Name)
					}
				} else {
					for _, l := range strings.Split(out, "\n") {
						if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "orders/") {
							names = append(names, f[0])
						}
					}
				}
				if len(names) > 10 {
					t.Fatalf("page %d lists %d locks with --limit 10", pages, len(names))
				}
				for _, n := range names {
					if got[n] || !want[n] {
						t.Fatalf("page %d: %q listed again or not held\n%s", pages, n, out)
					}
					got[n] = true
				}
				m := cursorRe.FindStringSubmatch(stderr)
				if m == nil {
					if !asJSON && !strings.Contains(out, "lock(s) on 3 nodes;") {
						t.Fatalf("last page has no total:\n%s", out)
					}
					break
				}
				if !asJSON && !strings.Contains(out, "more may match") {
					t.Fatalf("a page with a cursor does not say more may match:\n%s", out)
				}
				if pages > 5 {
					t.Fatal("the cursors do not end")
				}
				cursor = m[1]
			}
			if len(got) != len(want) {
				t.Fatalf("listed %d of %d", len(got), len(want))
			}
		})
	}

	// --limit 0: all of them in one run, no cursor.
	code, out, stderr := cli("locks", "--nodes", spec, "--match", "orders/*", "--limit", "0")
	if code != 0 || strings.Count(out, "orders/") != 25 || strings.Contains(stderr, "--cursor") {
		t.Fatalf("--limit 0: exit %d\n%s%s", code, out, stderr)
	}
	for _, bad := range [][]string{{"--limit", "-1"}, {"--cursor", "garbage\x1b[31m"}} {
		code, _, stderr := cli(append([]string{"locks", "--nodes", spec}, bad...)...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || !strings.HasPrefix(first, "quorumlock locks: --") || strings.Count(first, "quorumlock") != 1 || strings.Contains(stderr, "\x1b") {
			t.Fatalf("%q: exit %d, stderr %q", bad, code, stderr)
		}
	}
}

func mustLock(t *testing.T, c *quorum.Client, name string) *quorum.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
