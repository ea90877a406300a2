package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// valueInput is a porcupine input of a term's value register: a write of
// value, or a read (its output is the value read).
type valueInput struct {
	write bool
	value string
}

// valueModel is one term's value as a read/write register of strings,
// starting at the campaign's value. Step is pure: the state is a string.
func valueModel(initial string) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return initial },
		Step: func(state, input, output any) (bool, any) {
			in := input.(valueInput)
			if in.write {
				return true, in.value
			}
			return output.(string) == state.(string), state
		},
		Equal: func(a, b any) bool { return a.(string) == b.(string) },
		DescribeOperation: func(input, output any) string {
			in := input.(valueInput)
			if in.write {
				return fmt.Sprintf("proclaim %q", in.value)
			}
			return fmt.Sprintf("read → %q", output)
		},
	}
}

// termOps are the operations on one term's value.
type termOps struct {
	term    uint64
	initial string
	elected bool // an Ok acquire gave the initial value
	ops     []porcupine.Operation
	reads   int
}

// checkValues judges every term's value as a linearizable register (see
// ElectionResults.Values). A term read but with no Ok campaign in the
// history (its campaign's outcome unknown) has no known initial value and
// is left out.
func checkValues(h history.History, timeout time.Duration, ex examples) Result {
	terms := map[uint64]*termOps{}
	of := func(term uint64) *termOps {
		t := terms[term]
		if t == nil {
			t = &termOps{term: term}
			terms[term] = t
		}
		return t
	}
	// An Unknown Proclaim whose value no read returned may as well take
	// effect after every read: left out, it changes no verdict, and a
	// leader cut off from the nodes leaves dozens of them open at once
	// (porcupine's search grows with the open writes).
	read := map[uint64]map[string]bool{}
	for _, o := range h.Ops {
		if (o.Kind == history.LeaderRead || o.Kind == history.Observe) && o.Outcome == history.Ok && o.Token != 0 {
			if read[o.Token] == nil {
				read[o.Token] = map[string]bool{}
			}
			read[o.Token][o.Text] = true
		}
	}
	for _, o := range h.Ops {
		switch {
		case o.Kind == history.Acquire && o.Role == RoleLeader && o.Outcome == history.Ok && o.Token != 0:
			if t := of(o.Token); !t.elected {
				t.initial, t.elected = o.Text, true
			}
		case o.Kind == history.Proclaim && o.Token != 0:
			switch o.Outcome {
			case history.Ok:
				of(o.Token).ops = append(of(o.Token).ops, pOp(o.Worker, valueInput{write: true, value: o.Text}, nil, o.Invoke, o.Complete, o.ID))
			case history.Unknown:
				if !read[o.Token][o.Text] {
					continue
				}
				of(o.Token).ops = append(of(o.Token).ops, pOp(o.Worker, valueInput{write: true, value: o.Text}, nil, o.Invoke, never, o.ID))
			}
		case (o.Kind == history.LeaderRead || o.Kind == history.Observe) && o.Outcome == history.Ok && o.Token != 0:
			t := of(o.Token)
			t.ops = append(t.ops, pOp(o.Worker, valueInput{}, o.Text, o.Invoke, o.Complete, o.ID))
			t.reads++
		}
	}
	var list []*termOps
	reads, unelected := 0, 0
	for _, t := range terms {
		switch {
		case t.reads == 0:
		case !t.elected:
			unelected++
		default:
			list = append(list, t)
			reads += t.reads
		}
	}
	if len(list) == 0 {
		note := "no term's value was read"
		if unelected > 0 {
			note = fmt.Sprintf("%d terms read, none with a known campaign value", unelected)
		}
		return Result{Verdict: Unknown, Note: note}
	}
	slices.SortFunc(list, func(a, b *termOps) int { return cmp.Compare(a.term, b.term) })
	r := Result{Verdict: Ok, Note: fmt.Sprintf("%d reads of %d terms", reads, len(list))}
	deadline := time.Now().Add(timeout)
	undecided := 0
	for _, t := range list {
		left := time.Until(deadline)
		if left <= 0 {
			undecided++
			continue
		}
		res := linearizable(valueModel(t.initial), t.ops, left)
		switch res.Verdict {
		case Unknown:
			undecided++
		case Violated:
			note := fmt.Sprintf("term %d (campaign value %q): %s", t.term, t.initial, res.Note)
			var ops []history.OpID
			if len(res.Examples) > 0 {
				note = fmt.Sprintf("term %d (campaign value %q): %s", t.term, t.initial, res.Examples[0].Note)
				ops = res.Examples[0].Ops
			}
			ex.add(&r, note, ops...)
		}
	}
	switch {
	case r.Count > 0:
		r.Verdict = Violated
	case undecided > 0:
		r.Verdict = Unknown
		r.Note = fmt.Sprintf("porcupine ran out of time on %d of %d terms", undecided, len(list))
	}
	if unelected > 0 {
		r.Note += fmt.Sprintf("; %d terms read without a known campaign value left out", unelected)
	}
	return r
}
