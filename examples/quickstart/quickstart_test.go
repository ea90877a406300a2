package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestREADMEMatchesQuickstart keeps the README's first Go block identical
// to this program, so the code a reader copies is the code
// TestQuickstartRuns compiles and runs.
func TestREADMEMatchesQuickstart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	block, line, ok := firstGoBlock(string(readme))
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	if !strings.Contains(block, "func main()") {
		t.Fatalf("README.md's first Go block (line %d) has no func main", line)
	}
	got, want := strings.Split(block, "\n"), strings.Split(string(src), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("README.md line %d differs from examples/quickstart/main.go line %d (copy main.go into the README's first Go block):\nREADME:  %q\nmain.go: %q", line+i, i+1, g, w)
		}
	}
}

// firstGoBlock returns the body of the first ```go fence of a Markdown
// text and the line number of its first line.
func firstGoBlock(md string) (body string, line int, ok bool) {
	lines := strings.SplitAfter(md, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "```go" {
			continue
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if strings.TrimSpace(l) == "```" {
				return b.String(), i + 2, true
			}
			b.WriteString(l)
		}
		return "", 0, false
	}
	return "", 0, false
}

// TestQuickstartRuns builds the README's program and runs it against three
// local nodes: free, held by another owner, and with no node reachable.
func TestQuickstartRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	servers := localredis.StartNT(t, 3, localredis.Config{Persistence: localredis.AOFAlways})
	nodes := testutil.URLs(servers)

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example with:", err)
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(t *testing.T, nodes string) (stdout, stderr string, exit int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		// GOMAXPROCS=1: go-redis' pools hold 10 connections per
		// processor, which bounds its log lines (see "unreachable").
		cmd.Env = append(os.Environ(), quorum.EnvNodes+"="+nodes, "GOMAXPROCS=1")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			exit = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), exit
	}

	t.Run("free", func(t *testing.T) {
		stdout, stderr, exit := run(t, nodes)
		if exit != 0 || stderr != "" {
			t.Fatalf("exit %d, stderr %q", exit, stderr)
		}
		if !regexp.MustCompile(`^orders/42 is ours, fencing token \d+\n$`).MatchString(stdout) {
			t.Fatalf("stdout %q", stdout)
		}
		for _, s := range servers { // Unlock gave the lock back
			keys, err := s.Client().Keys(t.Context(), "*{orders/42}").Result()
			if err != nil || len(keys) != 0 {
				t.Errorf("%s: lock key still there (%q, %v)", s.Addr(), keys, err)
			}
			// No key of the program's (fencing counters aside, which
			// localredis leaves to their own tests) stays for good.
			forever, err := s.KeysWithoutExpiry(t.Context())
			if err != nil || len(forever) != 0 {
				t.Errorf("%s: keys without expiry after the program ended: %q (%v)", s.Addr(), forever, err)
			}
		}
	})

	t.Run("held", func(t *testing.T) {
		other, err := quorum.Dial(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		mu, err := other.Mutex("orders/42")
		if err != nil {
			t.Fatal(err)
		}
		lease, err := mu.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Unlock(context.WithoutCancel(t.Context()))
		stdout, stderr, exit := run(t, nodes) // waits its 5 s, then gives up
		if exit != 1 || stdout != "" || !strings.Contains(stderr, "busy, another owner held it: ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", exit, stdout, stderr)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		var dead []string
		for range 3 {
			port, err := localredis.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, "redis://127.0.0.1:"+strconv.Itoa(port))
		}
		stdout, stderr, exit := run(t, strings.Join(dead, ","))
		if exit != 1 || stdout != "" || !strings.Contains(stderr, "fewer than a quorum of nodes answered: ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", exit, stdout, stderr)
		}
		// The example sets no logger (README says why): go-redis logs
		// failed dials until a pool's worth (10 here) failed in a row, in
		// each of a client's pools (commands, pub/sub): a few dozen lines
		// for three dead nodes over the 5 s, not a stream.
		if n := strings.Count(stderr, "connection pool: failed to dial"); n > 3*3*10 {
			t.Errorf("go-redis logged %d failed dials for 3 dead nodes, more than 90:\n%s", n, stderr)
		} else {
			t.Logf("go-redis logged %d failed dials for 3 dead nodes", n)
		}
	})
}
