package checker

import (
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// gw records a guard write of worker w under lease with token over
// [at, at+1] ms; out Ok = accepted, Fail = refused with last.
func (b *hb) gw(w int, lease history.OpID, at float64, token uint64, out history.Outcome, last uint64) {
	b.add(history.Op{Worker: w, Kind: history.GuardWrite, Lease: lease, Invoke: ms(at), Complete: ms(at + 1), Token: token, Value: int64(token), Outcome: out, Last: last})
}

func TestGuardOrder(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hb)
		want  Verdict
		count int
	}{
		{"none", func(b *hb) { b.tenure(0, 0, 1, 0) }, Unknown, 0},
		{"in order, twice per tenure", func(b *hb) {
			a := b.acquire(0, 0, 1, 9, 100)
			b.gw(0, a, 2, 9, history.Ok, 0)
			b.gw(0, a, 5, 9, history.Ok, 0)
			c := b.acquire(1, 10, 11, 10, 110)
			b.gw(1, c, 12, 10, history.Ok, 0)
			b.gw(1, c, 15, 10, history.Ok, 0)
		}, Ok, 0},
		{"stale refused", func(b *hb) {
			a := b.acquire(0, 0, 1, 99, 100)
			c := b.acquire(1, 10, 11, 100, 110)
			b.gw(1, c, 12, 100, history.Ok, 0)
			b.gw(0, a, 20, 99, history.Fail, 100)
		}, Ok, 0},
		{"stale accepted", func(b *hb) {
			a := b.acquire(0, 0, 1, 99, 100)
			c := b.acquire(1, 10, 11, 100, 110)
			b.gw(1, c, 12, 100, history.Ok, 0)
			b.gw(0, a, 20, 99, history.Ok, 0)
		}, Violated, 1},
		{"one token, two tenures", func(b *hb) {
			a := b.acquire(0, 0, 1, 7, 100)
			b.gw(0, a, 2, 7, history.Ok, 0)
			c := b.acquire(1, 10, 11, 7, 110)
			b.gw(1, c, 12, 7, history.Ok, 0)
		}, Violated, 1},
		{"overlapping writes are not ordered", func(b *hb) {
			a := b.acquire(0, 0, 1, 8, 100)
			c := b.acquire(1, 0, 1, 9, 100)
			b.add(history.Op{Worker: 1, Kind: history.GuardWrite, Lease: c, Invoke: ms(2), Complete: ms(10), Token: 9})
			b.gw(0, a, 3, 8, history.Ok, 0)
		}, Ok, 0},
		{"newest holder refused", func(b *hb) {
			a := b.acquire(0, 0, 1, 99, 100)
			b.gw(0, a, 2, 99, history.Ok, 0)
			c := b.acquire(1, 10, 11, 100, 110)
			b.gw(1, c, 12, 100, history.Fail, 99) // "100" < "99" as strings
		}, Violated, 1},
		{"own repeat refused", func(b *hb) {
			a := b.acquire(0, 0, 1, 5, 100)
			b.gw(0, a, 2, 5, history.Ok, 0)
			b.gw(0, a, 4, 5, history.Fail, 5)
		}, Violated, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hb
			tt.build(&b)
			r := Check(b.h(), WithoutLinearizability()).GuardOrder
			if r.Verdict != tt.want || r.Count != tt.count {
				t.Errorf("guard order = %v, want %s (%d)", r, tt.want, tt.count)
			}
		})
	}
}
