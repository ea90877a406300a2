package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runBin runs the built binary and returns its exit status, stdout and
// stderr.
func runBin(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return exitCode(err, -1), out.String(), errb.String()
}

// Every usage error says on stderr what was wrong and how to fix it, with
// the command's synopsis, and exits 2; stdout stays empty.
func TestUsageErrorsOnStderr(t *testing.T) {
	bin := buildCLI(t)
	cases := []struct {
		args []string
		want []string // on stderr
	}{
		{[]string{"lock", "--wait", "-1s", "x", "--", "true"}, []string{"--wait -1s is negative", "usage: quorumlock lock"}},
		{[]string{"lock", "job2"}, []string{`give a COMMAND to run while holding "job2"`, "usage: quorumlock lock"}},
		{[]string{"lock"}, []string{"give the lock's NAME and a COMMAND"}},
		{[]string{"lock", "--try", "--wait", "1s", "x", "true"}, []string{"--try and --wait"}},
		{[]string{"locks", "extra"}, []string{`unexpected arguments ["extra"]`, "--match"}},
		{[]string{"demo", "--freeze", "3"}, []string{"--freeze 3 would leave no majority"}},
		{[]string{"inspect"}, []string{"give the lock's NAME"}},
		{[]string{"inspect", "a", "b"}, []string{"one NAME only"}},
		{[]string{"lock", "--bogus", "x", "true"}, []string{"flag provided but not defined: -bogus"}},
		{[]string{"unlock", "x"}, []string{"without --force", "quorumlock inspect x"}},
		{[]string{"demo", "--nodes", "3"}, []string{"--node-count 3"}},
		{[]string{"check", "--wait", "1"}, []string{"check --wait is now --replicas 1"}},
		{[]string{"nosuch"}, []string{`unknown command "nosuch"`}},
		{[]string{"--bogus", "locks"}, []string{"unknown global flag --bogus"}},
		{nil, []string{"give a command", "usage: quorumlock [--nodes URLS] <command>"}},
		// Every bad flag value or argument, command by command.
		{[]string{"lock", "", "--", "true"}, []string{"NAME is empty"}},
		{[]string{"lock", " ", "--", "true"}, []string{"NAME is empty"}},
		{[]string{"lock", "--ttl", "0", "x", "--", "true"}, []string{"--ttl 0s"}},
		{[]string{"lock", "--ttl", "-1s", "x", "--", "true"}, []string{"--ttl -1s"}},
		{[]string{"lock", "--ttl", "soon", "x", "--", "true"}, []string{"invalid value"}},
		{[]string{"lock", "--ttl", "1ms", "x", "--", "true"}, []string{"--ttl 1ms: ttl 1ms is not larger than its drift allowance"}},
		{[]string{"lock", "--nodes", "127.0.0.1:7,redis://127.0.0.1:7", "x", "--", "true"}, []string{"named twice"}},
		{[]string{"lock", "--grace", "-1s", "x", "--", "true"}, []string{"--grace -1s is negative"}},
		{[]string{"lock", "x", "--", "true"}, []string{"no nodes given", "QUORUMLOCK_NODES"}},
		{[]string{"lock", "--nodes", "", "x", "--", "true"}, []string{"--nodes is empty"}},
		{[]string{"lock", "--nodes", " , ", "x", "--", "true"}, []string{"--nodes is empty"}},
		{[]string{"lock", "--nodes", "redis://[::1", "x", "--", "true"}, []string{"is not a redis:// or rediss:// URL"}},
		{[]string{"lock", "--nodes", "http://:usage-Secret9@h:1", "x", "--", "true"}, []string{"is not a redis:// or rediss:// URL", "***"}},
		{[]string{"--nodes", "", "locks"}, []string{"--nodes is empty"}},
		{[]string{"--nodes=", "locks"}, []string{"--nodes is empty"}},
		{[]string{"locks", "--nodes", ""}, []string{"--nodes is empty"}},
		{[]string{"locks", "--match", "["}, []string{`--match "[" is not a valid glob`}},
		{[]string{"locks", "--match", ""}, []string{"--match is empty"}},
		{[]string{"inspect", ""}, []string{"NAME is empty"}},
		{[]string{"unlock", "--force", ""}, []string{"NAME is empty"}},
		{[]string{"unlock", "--force", "a", "b"}, []string{"one NAME only"}},
		{[]string{"check", "--ttl", "0"}, []string{"--ttl 0s"}},
		{[]string{"check", "--replicas", "-1"}, []string{"--replicas -1 is negative"}},
		{[]string{"check", "extra"}, []string{"unexpected arguments"}},
		{[]string{"console", "--refresh", "10ms"}, []string{"--refresh 10ms is below 100ms"}},
		{[]string{"console", "--match", "a["}, []string{"not a valid glob"}},
		{[]string{"console", "--listen", "nohost"}, []string{"--listen: listen address"}},
		{[]string{"console", "--listen", "0.0.0.0:0"}, []string{"--listen: refusing to listen beyond loopback"}},
		{[]string{"demo", "--ttl", "0"}, []string{"--ttl 0s"}},
		{[]string{"demo", "--node-count", "0"}, []string{"at least 1"}},
		{[]string{"help", "nosuch"}, []string{`unknown command "nosuch"`}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, stderr := runBin(t, bin, []string{"QUORUMLOCK_NODES="}, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout is not empty:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "Secret9") {
				t.Errorf("stderr has the password:\n%s", stderr)
			}
			// The error is one line, prefixed once.
			if first := strings.SplitN(stderr, "\n", 2)[0]; doubledPrefix(first) {
				t.Errorf("prefix doubled: %s", first)
			}
		})
	}
}

// quorumlock help documents the exit codes; global flags may come before
// the command.
func TestHelpExitCodesAndGlobalFlags(t *testing.T) {
	bin := buildCLI(t)
	code, out, _ := runBin(t, bin, nil, "help")
	if code != 0 {
		t.Fatalf("help exited %d", code)
	}
	for _, e := range exitCodes {
		if w := fmt.Sprintf("\n  %-4d %s\n", e.code, e.meaning); !strings.Contains(out, w) {
			t.Errorf("help lacks exit status %d:\n%s", e.code, out)
		}
	}
	// --nodes before the command reaches it: the error names the node, not
	// "unknown command".
	code, _, stderr := runBin(t, bin, []string{"QUORUMLOCK_NODES="}, "--nodes", "redis://127.0.0.1:1", "inspect", "x")
	if code == 2 || strings.Contains(stderr, "unknown command") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("--nodes before inspect: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runBin(t, bin, []string{"QUORUMLOCK_NODES="}, "--nodes=redis://127.0.0.1:1", "locks")
	if code == 2 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("--nodes= before locks: exit %d\n%s", code, stderr)
	}
}

// doubledPrefix reports whether an error line says "quorumlock:" after its
// start, or repeats its command as a prefix ("quorumlock console: console:").
func doubledPrefix(line string) bool {
	if strings.Contains(line[min(1, len(line)):], "quorumlock: ") {
		return true
	}
	m := regexp.MustCompile(`^quorumlock (\w+): (\w+): `).FindStringSubmatch(line)
	return m != nil && m[1] == m[2]
}

// The CLI prefixes an error once: the library's "quorumlock: " and a
// package's own "console: " go, wherever an error was wrapped, and a
// joined error becomes one line.
func TestMessageOnePrefixOneLine(t *testing.T) {
	for _, tc := range []struct{ cmd, in, want string }{
		{"lock", "quorumlock: lock not obtained", "lock not obtained"},
		{"lock", "the lease on \"x\" was lost: quorumlock: lease lost", "the lease on \"x\" was lost: lease lost"},
		{"console", "console: refusing to listen", "refusing to listen"},
		{"console", "--listen: console: listen address \"x\"", "--listen: listen address \"x\""},
		{"lock", "quorumlock: lock not obtained\nquorumlock: node a: refused\n  b: timeout", "lock not obtained; node a: refused; b: timeout"},
		{"locks", "lock names: a, b", "lock names: a, b"},
	} {
		if got := message(tc.cmd, tc.in); got != tc.want {
			t.Errorf("message(%q, %q) = %q, want %q", tc.cmd, tc.in, got, tc.want)
		}
	}
}
