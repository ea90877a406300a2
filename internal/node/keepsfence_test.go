package node

import (
	"testing"
	"time"
)

// The fence a grant reports is what the node stores, on every grant path
// (free, repeated, reentrant), so a quorum that reported the token needs no
// write-back; without fencing, nothing is kept.
func TestKeepsFenceReportsTheStoredCounter(t *testing.T) {
	_, n := start(t)
	ctx := t.Context()
	tests := []struct {
		name           string
		owner, attempt string
	}{
		{"free", "alice", "a1"},
		{"repeated attempt", "alice", "a1"},
		{"reentrant", "alice", "a2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := n.Lock("kf", tt.owner, tt.attempt, true)
			if !l.KeepsFence() {
				t.Fatal("KeepsFence false with fencing on")
			}
			ok, _, fence, err := l.Acquire(ctx, 5*time.Second)
			if !ok || err != nil {
				t.Fatalf("acquire: %v, %v", ok, err)
			}
			st, err := n.Inspect(ctx, "kf")
			if err != nil {
				t.Fatal(err)
			}
			if fence < 1 || st.Fence != fence {
				t.Fatalf("grant reported fence %d, node stores %d", fence, st.Fence)
			}
		})
	}
	if n.Lock("kf", "bob", "b1", false).KeepsFence() {
		t.Fatal("KeepsFence true without fencing")
	}
}
