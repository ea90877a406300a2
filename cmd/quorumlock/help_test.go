package main

import (
	"bytes"
	"sort"
	"strings"
	"testing"
)

// Every command answers --help (and -h) with exit status 0, its name and
// its flags, on stdout, without doing anything else.
func TestHelpForEveryCommand(t *testing.T) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("no commands registered")
	}
	for _, name := range names {
		for _, flag := range []string{"--help", "-h"} {
			t.Run(name+flag, func(t *testing.T) {
				var out, errOut bytes.Buffer
				if code := run([]string{name, flag}, &out, &errOut); code != 0 {
					t.Fatalf("quorumlock %s %s exited %d; stderr: %s", name, flag, code, errOut.String())
				}
				help := out.String()
				if !strings.Contains(help, "quorumlock "+name) {
					t.Errorf("help does not name the command:\n%s", help)
				}
				if !strings.Contains(help, "  -") {
					t.Errorf("help lists no flags:\n%s", help)
				}
			})
		}
	}
	var out bytes.Buffer
	if code := run([]string{"help"}, &out, &out); code != 0 {
		t.Fatalf("quorumlock help exited %d", code)
	}
	for _, name := range names {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("quorumlock help does not list %s:\n%s", name, out.String())
		}
	}
}
