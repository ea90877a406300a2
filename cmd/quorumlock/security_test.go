package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// A Redis user without +evalsha, and a lock someone else holds (a free
// lock is taken with SET NX, no script; a held one needs the scripts): lock
// does not wait for ever, it exits 77 at once, naming the permission, and
// prints no password.
func TestLockPermanentErrorExits(t *testing.T) {
	bin := buildCLI(t)
	servers := localredis.StartNT(t, 3, localredis.Config{})
	var urls []string
	for _, s := range servers {
		rc := s.Client()
		err := rc.Do(t.Context(), "ACL", "SETUSER", "noeval", "reset", "on", ">noeval-Secret-pw", "allkeys", "allchannels", "+@all", "-evalsha").Err()
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "redis://noeval:noeval-Secret-pw@"+s.Addr())
	}
	holder, err := quorum.Dial(testutil.URLs(servers), quorum.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	m, err := holder.Mutex("job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	e, err := holder.Election("job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"lock", "job", "--", "true"},
		{"lock", "--wait", "30s", "job", "--", "true"},
		{"elect", "job", "--", "true"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cmd.Environ(), quorum.EnvNodes+"="+strings.Join(urls, ","))
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		code := exitCodeOf(cmd.ProcessState, ctx)
		cancel()
		t.Logf("%q: exit %d after %v", args, code, time.Since(start).Round(time.Millisecond))
		if code != exitPermanent || !strings.Contains(string(out), "+evalsha") || strings.Contains(string(out), "Secret") {
			t.Errorf("%q: exit %d, want %d naming +evalsha without the password:\n%s", args, code, exitPermanent, out)
		}
	}
}

// exitCode of a finished command; -1 when ctx killed it.
func exitCodeOf(ps interface{ ExitCode() int }, ctx context.Context) int {
	if ctx.Err() != nil {
		return -1
	}
	return ps.ExitCode()
}

// A lock name with a newline and an escape sequence prints as one quoted
// line in locks, inspect and unlock: it cannot add a fake row or colour
// the operator's terminal.
func TestOutputQuotesNames(t *testing.T) {
	spec, c := opsNodes(t, 3)
	name := "evil\nfake-lock  held  root:1\x1b[31m"
	m, err := c.Mutex(name, quorum.WithOwner("owner\x1b]0;pwned\x07"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	quoted := strconv.QuoteToASCII(name)
	for _, args := range [][]string{
		{"locks", "--nodes", spec},
		{"inspect", "--nodes", spec, name},
		{"unlock", "--nodes", spec, "--force", "--by", "ops", name},
	} {
		code, stdout, stderr := cli(args...)
		out := stdout + stderr
		if code != exitOK || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(stdout, quoted) {
			t.Errorf("%s: exit %d, want the name as %s and no control character:\n%q", args[0], code, quoted, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "fake-lock") {
				t.Errorf("%s: a line of the name passes for a row: %q", args[0], line)
			}
		}
	}
}

// lock -- env: the command sees its lock's name and token, and none of the
// secrets or the outer lock's values in our environment.
func TestLockChildEnvironment(t *testing.T) {
	spec, _ := opsNodes(t, 3)
	t.Setenv(quorum.EnvNodes, "redis://:env-Secret-pw@127.0.0.1:1")
	t.Setenv(console.EnvToken, "console-Secret-token")
	t.Setenv("QUORUMLOCK_TOKEN", "987654321")
	t.Setenv("QUORUMLOCK_TERM", "123456789")
	code, stdout, stderr := cli("lock", "--nodes", spec, "--fencing", "job/env", "--", "env")
	if code != exitOK {
		t.Fatalf("lock -- env: exit %d\n%s", code, stderr)
	}
	for _, bad := range []string{"Secret", "987654321", "123456789", quorum.EnvNodes + "=", console.EnvToken + "="} {
		if strings.Contains(stdout, bad) {
			t.Errorf("the command's environment has %q:\n%s", bad, stdout)
		}
	}
	for _, want := range []string{"QUORUMLOCK_LOCK=job/env\n", "QUORUMLOCK_TOKEN="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the command's environment lacks %q:\n%s", want, stdout)
		}
	}
}

// Names and TTLs that cannot work are usage errors naming the limit.
func TestLockRefusesNamesAndTTLs(t *testing.T) {
	spec, _ := opsNodes(t, 3)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"election:e2"}, "reserved for elections"},
		{[]string{strings.Repeat("n", quorum.MaxNameLen+1)}, "MaxNameLen"},
		{[]string{"--ttl", "87600h", "job"}, "above the longest TTL, 24h0m0s"},
	} {
		args := append(append([]string{"lock", "--nodes", spec, "--try"}, tc.args...), "--", "true")
		code, _, stderr := cli(args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lock %.40q: exit %d, want %d saying %q:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}

// The console's token comes from a file (out of ps) and must be strong to
// listen beyond loopback; TLS needs both files. Nothing prints the token.
func TestConsoleTokenFileAndTLSFlags(t *testing.T) {
	spec, _ := opsNodes(t, 3)
	t.Setenv(console.EnvToken, "")
	weak := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(weak, []byte("Tiny-Tok3n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0", "--token-file", weak}, "fewer than 16"},
		{[]string{"--token", "x", "--token-file", weak}, "contradict"},
		{[]string{"--token-file", filepath.Join(t.TempDir(), "none")}, "--token-file"},
		{[]string{"--tls-cert", weak}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", weak, "--tls-key", weak}, "--tls-cert/--tls-key"},
	} {
		code, stdout, stderr := cli(append([]string{"console", "--nodes", spec}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stdout+stderr, "Tiny-Tok3n") {
			t.Errorf("console %q: exit %d, want %d saying %q, without the token:\n%s%s", tc.args, code, exitUsage, tc.want, stdout, stderr)
		}
	}
}
