package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

type regOp uint8

const (
	opRead regOp = iota
	opWrite
	opCAS
)

// regInput is a porcupine input: read (output is the value read), write to,
// or compare-and-set from → to.
type regInput struct {
	op       regOp
	from, to int64
}

// registerModel is an int64 register starting at 0 with read, write and
// compare-and-set. Step is pure: the state is an int64 value.
var registerModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		in := input.(regInput)
		switch in.op {
		case opRead:
			return output.(int64) == s, s
		case opWrite:
			return true, in.to
		case opCAS:
			if s == in.from {
				return true, in.to
			}
		}
		return false, s
	},
	Hash: func(state any) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		switch in.op {
		case opRead:
			return fmt.Sprintf("read → %d", output)
		case opWrite:
			return fmt.Sprintf("write %d", in.to)
		}
		return fmt.Sprintf("cas %d → %d", in.from, in.to)
	},
}

// never is the return time of an operation whose effect is unknown: it may
// take effect at any point after its call (Jepsen's treatment of
// indeterminate operations).
const never = math.MaxInt64

func pOp(worker int, in any, out any, call, ret time.Duration, ids ...history.OpID) porcupine.Operation {
	return porcupine.Operation{ClientId: max(worker, 0), Input: in, Output: out, Call: int64(call), Return: int64(ret), Metadata: ids}
}

// finalRead appends a read of the counter's final value after everything
// else: the resource really held that value at the end, and without it a
// write that overwrote a blind write would linearize in the wrong order
// unnoticed. Skipped when writes of unknown outcome make the final value
// uncertain.
func finalRead(ops []porcupine.Operation, res []history.Op, end time.Duration) []porcupine.Operation {
	var last *history.Op
	for i := range res {
		o := &res[i]
		if o.Kind == history.Write && o.Outcome == history.Unknown {
			return ops
		}
		if o.Accepted() {
			last = o
		}
	}
	var v int64
	if last != nil {
		v = last.Value
	}
	return append(ops, pOp(0, regInput{op: opRead}, v, end+1, end+1))
}

// checkRegister checks the counter as a read/write register: Ok reads and
// accepted writes over their own [invoke, complete]; writes of unknown
// outcome may take effect any time after their invoke; rejected writes and
// failed reads had no effect and are left out.
func checkRegister(h history.History, timeout time.Duration) Result {
	res := resourceOps(h)
	var ops []porcupine.Operation
	for _, o := range res {
		switch {
		case o.Kind == history.Read && o.Outcome == history.Ok:
			ops = append(ops, pOp(o.Worker, regInput{op: opRead}, o.Value, o.Invoke, o.Complete, o.ID))
		case o.Accepted():
			ops = append(ops, pOp(o.Worker, regInput{op: opWrite, to: o.Value}, nil, o.Invoke, o.Complete, o.ID))
		case o.Kind == history.Write && o.Outcome == history.Unknown:
			ops = append(ops, pOp(o.Worker, regInput{op: opWrite, to: o.Value}, nil, o.Invoke, never, o.ID))
		}
	}
	ops = finalRead(ops, res, h.End())
	return linearizable(registerModel, ops, timeout)
}

// checkCriticalSections checks the critical sections as atomic increments:
// each accepted write paired with the latest read of the same holder before
// it becomes one compare-and-set (read value → written value) spanning
// [read invoke, write complete]; reads not followed by an accepted write
// stay reads; writes without a read are plain writes; writes of unknown
// outcome are plain writes that may take effect any time after their
// invoke (more permissive than a compare-and-set, so never a false alarm).
// Overlapping critical sections that both succeed cannot be ordered, and
// the check fails — the lock did not make read-modify-write atomic.
func checkCriticalSections(ix *index, timeout time.Duration) Result {
	res := resourceOps(ix.h)
	var ops []porcupine.Operation
	open := map[holder]history.Op{} // the latest read of each holder, not yet paired
	flush := func(hd holder) {
		if r, ok := open[hd]; ok {
			ops = append(ops, pOp(r.Worker, regInput{op: opRead}, r.Value, r.Invoke, r.Complete, r.ID))
			delete(open, hd)
		}
	}
	for _, o := range res {
		hd, _ := ix.holderOf(o)
		switch {
		case o.Kind == history.Read && o.Outcome == history.Ok:
			flush(hd)
			open[hd] = o
		case o.Accepted():
			if r, ok := open[hd]; ok {
				ops = append(ops, pOp(o.Worker, regInput{op: opCAS, from: r.Value, to: o.Value}, nil, r.Invoke, o.Complete, r.ID, o.ID))
				delete(open, hd)
			} else {
				ops = append(ops, pOp(o.Worker, regInput{op: opWrite, to: o.Value}, nil, o.Invoke, o.Complete, o.ID))
			}
		case o.Kind == history.Write && o.Outcome == history.Unknown:
			flush(hd)
			ops = append(ops, pOp(o.Worker, regInput{op: opWrite, to: o.Value}, nil, o.Invoke, never, o.ID))
		case o.Kind == history.Write:
			flush(hd) // rejected: the read stands alone
		}
	}
	holders := make([]holder, 0, len(open))
	for hd := range open {
		holders = append(holders, hd)
	}
	slices.SortFunc(holders, func(a, b holder) int { return cmp.Compare(open[a].ID, open[b].ID) })
	for _, hd := range holders {
		flush(hd)
	}
	ops = finalRead(ops, res, ix.h.End())
	return linearizable(registerModel, ops, timeout)
}

// linearizable runs porcupine with a bounded timeout. On a violation it
// re-runs in verbose mode (within the same budget) to name the operation
// at which the longest linearizable prefix gets stuck.
func linearizable(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) Result {
	start := time.Now()
	switch porcupine.CheckOperationsTimeout(model, ops, timeout) {
	case porcupine.Ok:
		return Result{Verdict: Ok, Note: fmt.Sprintf("%d operations", len(ops))}
	case porcupine.Unknown:
		return Result{Verdict: Unknown, Note: fmt.Sprintf("porcupine timed out after %v on %d operations", timeout, len(ops))}
	}
	r := Result{Verdict: Violated, Count: 1, Note: fmt.Sprintf("no linearization of %d operations exists", len(ops))}
	remaining := timeout - time.Since(start)
	if remaining <= 0 {
		return r
	}
	res, info := porcupine.CheckOperationsVerbose(model, ops, remaining)
	if res != porcupine.Illegal {
		return r
	}
	parts := info.PartialLinearizations()
	if len(parts) != 1 {
		return r
	}
	var longest []int
	for _, l := range parts[0] {
		if len(l) > len(longest) {
			longest = l
		}
	}
	done := make([]bool, len(ops))
	for _, i := range longest {
		done[i] = true
	}
	stuck := -1
	for i, o := range ops {
		if !done[i] && (stuck < 0 || o.Call < ops[stuck].Call) {
			stuck = i
		}
	}
	if stuck >= 0 {
		ids, _ := ops[stuck].Metadata.([]history.OpID)
		r.Examples = []Example{{Ops: ids, Note: fmt.Sprintf("the longest linearizable prefix (%d of %d operations) cannot be extended by %s",
			len(longest), len(ops), model.DescribeOperation(ops[stuck].Input, ops[stuck].Output))}}
	}
	return r
}
