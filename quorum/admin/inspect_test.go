package admin

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestConclude(t *testing.T) {
	down := errors.New("no answer")
	held := func(owners ...string) NodeState {
		s := NodeState{}
		s.Present = true
		s.TTL = time.Second
		s.Holders = map[string]int64{}
		for _, o := range owners {
			s.Holders[o] = 1
		}
		return s
	}
	free := NodeState{}
	silent := NodeState{Err: down}
	tests := []struct {
		name    string
		nodes   []NodeState
		verdict Verdict
		holders []string
	}{
		{"all free", []NodeState{free, free, free}, Free, nil},
		{"quorum", []NodeState{held("a"), held("a"), free}, HeldByQuorum, []string{"a"}},
		{"quorum with one silent", []NodeState{held("a"), held("a"), silent}, HeldByQuorum, []string{"a"}},
		{"readers share", []NodeState{held("r1", "r2"), held("r1", "r2"), held("r1")}, HeldByQuorum, []string{"r1", "r2"}},
		{"minority", []NodeState{held("a"), free, free}, MinorityOnly, nil},
		{"split vote", []NodeState{held("a"), held("b"), free, free, free}, MinorityOnly, nil},
		{"minority could be quorum", []NodeState{held("a"), silent, free}, Unknown, nil},
		{"free with too many silent", []NodeState{free, silent, silent}, Unknown, nil},
		{"free with one silent", []NodeState{free, free, silent}, Free, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := len(tt.nodes)/2 + 1
			ins := conclude("x", q, tt.nodes)
			if ins.Verdict != tt.verdict || !slices.Equal(ins.Holders, tt.holders) {
				t.Fatalf("verdict %q holders %q, want %q %q", ins.Verdict, ins.Holders, tt.verdict, tt.holders)
			}
		})
	}
}
