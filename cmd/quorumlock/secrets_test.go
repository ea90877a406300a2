package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/quorum"
)

// nodeListForms are node lists a user may type wrong (or right, but with
// nodes that do not answer), each with the password PW in it.
var nodeListForms = []struct {
	name string
	list string // PW stands for the password
	bad  bool   // refused before anything is dialled
}{
	{"URL, bad port", "redis://:PW@127.0.0.1:1,redis://:PW@h:bad", true},
	{"user URL, bad db", "redis://user:PW@127.0.0.1:1/notadb", true},
	{"scheme-less, named twice", ":PW@127.0.0.1:1,:PW@127.0.0.1:1", true},
	{"scheme-less user, bad port", "user:PW@127.0.0.1:bad", true},
	{"URL named twice", "redis://:PW@127.0.0.1:1 redis://:PW@127.0.0.1:1", true},
	{"one slash", "redis:/:PW@127.0.0.1:1", true},
	{"unknown scheme", "foo://:PW@127.0.0.1:1", true},
	{"unclosed bracket", "redis://:PW@[::1:1", true},
	{"user without password, bad port", "PW@127.0.0.1:bad", true},
	{"nodes that do not answer", "redis://:PW@127.0.0.1:1,user:PW@127.0.0.1:2,redis://u:PW@127.0.0.1:3", false},
}

// secretCommands are the commands that take --nodes, with arguments that
// end quickly when the nodes do not answer.
var secretCommands = [][]string{
	{"lock", "--try", "job", "--", "true"},
	{"locks"},
	{"inspect", "job"},
	{"unlock", "--force", "--by", "ops", "job"},
	{"check"},
	{"elect", "--wait", "500ms", "job", "--", "true"},
	{"leader", "job"},
	{"functions", "load"},
	{"console", "--listen", "127.0.0.1:0"},
}

// No password of a node list, typed wrong or right, appears in anything a
// command prints, however the list is given: --nodes VALUE, --nodes=VALUE,
// the global --nodes, or $QUORUMLOCK_NODES. Each case has its own password;
// the short ones (below what the output scrubber replaces) test the
// redaction of each message itself.
func TestNoPasswordInAnyOutput(t *testing.T) {
	t.Setenv(console.EnvToken, "")
	deliveries := []string{"flag", "flag=", "global", "env"}
	n := 0
	for _, form := range nodeListForms {
		for _, cmd := range secretCommands {
			if !form.bad && cmd[0] == "console" {
				continue // it would serve: TestConsoleCommand covers it
			}
			for _, how := range deliveries {
				for _, short := range []bool{false, true} {
					n++
					pw := fmt.Sprintf("Sekr%04dZq", n)
					if short {
						pw = fmt.Sprintf("Z%02d", n%100)
					}
					list := strings.ReplaceAll(form.list, "PW", pw)
					var args []string
					t.Setenv(quorum.EnvNodes, "")
					switch how {
					case "flag":
						args = append([]string{cmd[0], "--nodes", list}, cmd[1:]...)
					case "flag=":
						args = append([]string{cmd[0], "--nodes=" + list}, cmd[1:]...)
					case "global":
						args = append([]string{"--nodes", list}, cmd...)
					case "env":
						t.Setenv(quorum.EnvNodes, list)
						args = cmd
					}
					code, stdout, stderr := cli(args...)
					if strings.Contains(stdout, pw) || strings.Contains(stderr, pw) {
						t.Errorf("%s, %s via %s: exit %d, the password %s is in the output:\nstdout: %s\nstderr: %s", form.name, cmd[0], how, code, pw, stdout, stderr)
					}
					if form.bad && code != exitUsage {
						t.Errorf("%s, %s via %s: exit %d, want %d (usage)\n%s", form.name, cmd[0], how, code, exitUsage, stderr)
					}
				}
			}
		}
	}
	t.Logf("%d command runs", n)
}

// The redaction of each message holds without the output scrubber: the
// node list's checks and quorum.Dial never quote a password.
func TestNodeListErrorsHidePasswords(t *testing.T) {
	for _, form := range nodeListForms {
		if !form.bad {
			continue
		}
		list := strings.ReplaceAll(form.list, "PW", "pw")
		err := checkNodes(list)
		if err == nil {
			t.Errorf("%s: checkNodes accepted %q", form.name, list)
			continue
		}
		// "pw" after the userinfo's ':' or before its '@'.
		if s := err.Error(); strings.Contains(s, ":pw") || strings.Contains(s, "pw@") {
			t.Errorf("%s: checkNodes: %s", form.name, s)
		}
		if c, err := quorum.Dial(list); err == nil {
			c.Close()
		} else if s := err.Error(); strings.Contains(s, ":pw") || strings.Contains(s, "pw@") {
			t.Errorf("%s: quorum.Dial: %s", form.name, s)
		}
	}
}
