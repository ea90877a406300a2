package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
)

// A usage error before any command (none, an unknown one, a bad global
// flag) prints its message and a two-line hint, not the whole help.
func TestGlobalUsageErrorIsShort(t *testing.T) {
	for _, args := range [][]string{nil, {"nosuch"}, {"--bogus", "locks"}, {"--nodes"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
		if code != exitUsage || out.Len() != 0 || len(lines) != 3 ||
			!strings.HasPrefix(lines[0], "quorumlock: ") || !strings.HasPrefix(lines[1], "usage: quorumlock [--nodes URLS] <command>") ||
			strings.Contains(errOut.String(), "Exit status") {
			t.Errorf("%q: exit %d, stdout %q, stderr (%d lines):\n%s", args, code, out.String(), len(lines), errOut.String())
		}
	}
}

// Every command's --help shows its usage line (its synopsis).
func TestHelpShowsUsageLine(t *testing.T) {
	if syn := synopsis("leader"); syn != "quorumlock leader [--watch] NAME" {
		t.Errorf("leader's synopsis is %q", syn)
	}
	for name := range commands {
		var out, errOut bytes.Buffer
		if code := run([]string{name, "--help"}, &out, &errOut); code != exitOK {
			t.Fatalf("%s --help: exit %d: %s", name, code, errOut.String())
		}
		if !strings.Contains(out.String(), "Usage: "+synopsis(name)+"\n") {
			t.Errorf("%s --help has no line %q:\n%s", name, "Usage: "+synopsis(name), out.String())
		}
	}
}

// leader exits 3 when too few nodes answer, and names each silent node
// with why, as quorumlock help promises.
func TestLeaderUnknownNamesSilentNodes(t *testing.T) {
	s := localredis.StartT(t, localredis.Config{})
	dead1, dead2 := testutil.RefusedAddr(t), testutil.RefusedAddr(t)
	var out, errOut bytes.Buffer
	code := run([]string{"leader", "--nodes", "redis://" + s.Addr() + ",redis://" + dead1 + ",redis://" + dead2, "sched"}, &out, &errOut)
	msg := errOut.String()
	if code != exitUnsure || out.Len() != 0 {
		t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, exitUnsure, out.String(), msg)
	}
	for _, want := range []string{dead1 + ": ", dead2 + ": ", "refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, s.Addr()) || strings.Count(msg, "\n") != 1 || doubledPrefix(msg) {
		t.Errorf("stderr names the node that answered, or is not one line with one prefix: %s", msg)
	}
}

// SIGTERM to lock or elect stops the command and says so once, naming
// the signal: no "context canceled".
func TestSignalSaysWhatHappenedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	nodes := startNodes(t, 3)
	bin := buildCLI(t)
	for _, kind := range []string{"lock", "elect"} {
		t.Run(kind, func(t *testing.T) {
			flag := filepath.Join(t.TempDir(), "running")
			args := []string{"sig-" + kind, "--", "sh", "-c", "touch " + flag + "; sleep 30"}
			var c *lockCmd
			if kind == "lock" {
				c = startLock(t, bin, nodes, args...)
			} else {
				c = startElect(t, bin, nodes, args...)
			}
			waitFile(t, flag, "", 20*time.Second)
			if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code := c.wait(t, 20*time.Second)
			msg := c.stderr.String()
			if code != 128+int(syscall.SIGTERM) {
				t.Errorf("exit %d, want %d (the command's, ended by SIGTERM)", code, 128+int(syscall.SIGTERM))
			}
			if strings.Contains(msg, "context canceled") || strings.Count(msg, "terminated") != 1 ||
				!strings.Contains(msg, "quorumlock "+kind+": terminated signal received: the command was stopped\n") {
				t.Errorf("stderr:\n%s", msg)
			}
		})
	}
}

// startNodes starts n redis-server processes (stopped in t.Cleanup) and
// returns them as a --nodes value.
func startNodes(t *testing.T, n int) string {
	t.Helper()
	return testutil.URLs(localredis.StartNT(t, n, localredis.Config{}))
}
