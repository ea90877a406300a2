package matrix

import (
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
)

// Judge adds to res the properties a cell is judged on besides its
// claim's (lease exclusion, token order, the loss signal, liveness; see
// judgeMore), so that another backend (the simulation, jepsen-like/sim)
// judges its cells exactly as the matrix does.
func Judge(c Cell, res report.Row, rep checker.Report) report.Row {
	return judgeMore(c, c.Expect(), res, rep)
}
