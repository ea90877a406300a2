package main

import (
	"errors"
	"io"
	"testing"

	"github.com/quorumlock/quorumlock/quorum"
)

func TestNodesFlag(t *testing.T) {
	t.Setenv(quorum.EnvNodes, "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3")
	tests := []struct {
		name    string
		args    []string
		want    string
		nodes   int
		wantErr error
	}{
		{name: "default from env", args: nil, want: "", nodes: 3},
		{name: "flag wins", args: []string{"--nodes", "127.0.0.1:7,127.0.0.1:8"}, want: "127.0.0.1:7,127.0.0.1:8", nodes: 2},
	}
	// An empty --nodes is a usage error, never a fall-back to the variable.
	for _, v := range []string{"", " ", ","} {
		fs := flags("x", "test", io.Discard)
		spec := nodesFlag(fs)
		if err := parse(fs, []string{"--nodes", v}); err != nil {
			t.Fatalf("--nodes %q: %v; the flag takes any text, dialNodes checks it", v, err)
		}
		if _, err := dialNodes(*spec); !errors.Is(err, errUsage) {
			t.Errorf("--nodes %q: %v, want a usage error", v, err)
		}
	}
	t.Run("no env", func(t *testing.T) {
		t.Setenv(quorum.EnvNodes, "")
		if _, err := dialNodes(""); !errors.Is(err, errNoNodes) {
			t.Fatalf("dialNodes without nodes: %v", err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flags("x", "test", io.Discard)
			spec := nodesFlag(fs)
			if err := parse(fs, tt.args); err != nil {
				t.Fatal(err)
			}
			if *spec != tt.want {
				t.Fatalf("--nodes = %q, want %q", *spec, tt.want)
			}
			c, err := dialNodes(*spec)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("dialNodes error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer c.Close()
			if got := len(c.Admin().Nodes()); got != tt.nodes {
				t.Fatalf("%d nodes, want %d", got, tt.nodes)
			}
		})
	}
}
