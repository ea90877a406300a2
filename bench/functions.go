package main

import (
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/quorum"
)

// functionsCaseID is the case that runs the lock's scripts by EVALSHA and
// as Redis Functions (FCALL, quorum.WithFunctions) side by side.
const functionsCaseID = "functions"

// functionsSpec: Lock+Unlock on one node by one goroutine, each row
// paired with its Functions-mode twin, with and without fencing (without
// it a free lock is taken by SET NX and only Unlock runs a script). The
// servers' INFO commandstats are read around every run, so the report
// gives the server's µs per script call: FCALL against EVALSHA.
func functionsSpec(b *bench) *spec {
	s := &spec{id: functionsCaseID, nodes: 1, goroutines: 1, metric: "Lock+Unlock", stats: true,
		title: "Lock+Unlock, scripts by EVALSHA or as Redis Functions (FCALL), N=1, 1 goroutine"}
	mk := func(variant string, fencing, functions bool) *entry {
		return b.entry(1, recommended, variant, adapters.Config{Kind: adapters.Quorumlock, Fencing: fencing,
			Quorum: []quorum.Option{quorum.WithFunctions(functions)}})
	}
	s.entries = []*entry{mk("", false, false), mk("functions", false, true), mk("fencing", true, false), mk("fencing functions", true, true)}
	s.lockUnlock(b.o.dur)
	return s
}

// scriptUsPerOp is the server's time in script commands (EVAL, EVALSHA,
// FCALL) per op, from INFO commandstats, and the script calls per op.
func scriptUsPerOp(r *CaseRow) (us, calls float64) {
	for _, c := range []string{"eval", "evalsha", "fcall"} {
		us += r.ServerStats[c+".usec"]
		calls += r.ServerStats[c+".calls"]
	}
	return us, calls
}

// functionsRatio compares a Functions-mode row with its EVALSHA twin: the
// server's µs in script commands per call, and throughput (paired).
func functionsRatio(res []CaseRow, r *CaseRow) string {
	twin := strings.TrimSpace(strings.TrimSuffix(r.Variant, "functions"))
	if twin == "" {
		twin = "default"
	}
	for j := range res {
		e := &res[j]
		if e.Title != r.Title || e.Variant != twin {
			continue
		}
		fu, fc := scriptUsPerOp(r)
		eu, ec := scriptUsPerOp(e)
		if fc == 0 || ec == 0 {
			return "no script stats"
		}
		return fmt.Sprintf("FCALL ÷ EVALSHA server µs/call %.2f (%.1f vs %.1f), ops/s %.2f", (fu/fc)/(eu/ec), fu/fc, eu/ec, pairedRatio(r, e))
	}
	return "—"
}
