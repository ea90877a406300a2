package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/localredis"
)

func TestCheckCommand(t *testing.T) {
	good := localredis.StartNT(t, 3, localredis.Config{Persistence: localredis.AOFAlways})
	plain := localredis.StartT(t, localredis.Config{Persistence: localredis.NoPersistence})
	cases := []struct {
		name  string
		nodes []string
		args  []string
		code  int
		want  []string
	}{
		{"clean", []string{good[0].Addr(), good[1].Addr(), good[2].Addr()}, nil, 0, []string{"0 problems, 0 warnings"}},
		{"one server behind two addresses", []string{plain.Addr(), "localhost:" + strconv.Itoa(plain.Port()), good[0].Addr()}, nil, 1,
			[]string{"PROBLEM", "the same server", "persistence off"}},
		{"warnings fail with --strict", []string{plain.Addr(), good[0].Addr(), good[1].Addr()}, []string{"--strict"}, 1, []string{"WARNING"}},
		{"warnings pass without it", []string{plain.Addr(), good[0].Addr(), good[1].Addr()}, nil, 0, []string{"WARNING"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"check", "--nodes", strings.Join(tc.nodes, ",")}, tc.args...)
			code := run(args, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
