package checker

import (
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// ms turns milliseconds into a time on the history's clock.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// hb builds hand-made histories with exact times (milliseconds).
type hb struct{ ops []history.Op }

func (b *hb) add(o history.Op) history.OpID {
	o.ID = history.OpID(len(b.ops) + 1)
	if o.Outcome == "" {
		o.Outcome = history.Ok
	}
	b.ops = append(b.ops, o)
	return o.ID
}

func (b *hb) h() history.History { return history.History{Ops: b.ops} }

// acquire: Ok over [inv, comp] with token and validity deadline (0 = none).
func (b *hb) acquire(w int, inv, comp float64, token uint64, validUntil float64) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Acquire, Invoke: ms(inv), Complete: ms(comp), Token: token, ValidUntil: ms(validUntil)})
}

func (b *hb) acquireOutcome(w int, inv, comp float64, out history.Outcome) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Acquire, Invoke: ms(inv), Complete: ms(comp), Outcome: out})
}

func (b *hb) release(w int, lease history.OpID, inv float64) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Release, Lease: lease, Invoke: ms(inv), Complete: ms(inv + 0.5)})
}

func (b *hb) extend(w int, lease history.OpID, inv, comp, validUntil float64) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Extend, Lease: lease, Invoke: ms(inv), Complete: ms(comp), ValidUntil: ms(validUntil)})
}

// read: an Ok read of v taking 10 µs at time at.
func (b *hb) read(w int, lease history.OpID, at float64, v int64) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Read, Lease: lease, Invoke: ms(at), Complete: ms(at + 0.01), Value: v})
}

// write: a write of v with token taking 10 µs at time at; out Ok = accepted,
// Fail = rejected.
func (b *hb) write(w int, lease history.OpID, at float64, v int64, token uint64, out history.Outcome) history.OpID {
	return b.add(history.Op{Worker: w, Kind: history.Write, Lease: lease, Invoke: ms(at), Complete: ms(at + 0.01), Value: v, Token: token, Outcome: out})
}

func (b *hb) nemesis(kind history.Kind, name string, at float64) history.OpID {
	return b.add(history.Op{Worker: history.Nemesis, Kind: kind, Name: name, Invoke: ms(at), Complete: ms(at + 0.1)})
}

// tenure records a full serial tenure: acquire, read, write read+1, release.
func (b *hb) tenure(w int, at float64, token uint64, value int64) {
	l := b.acquire(w, at, at+1, token, at+100)
	b.read(w, l, at+2, value)
	b.write(w, l, at+3, value+1, token, history.Ok)
	b.release(w, l, at+4)
}
