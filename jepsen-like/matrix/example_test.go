package matrix_test

import (
	"context"
	"fmt"
	"os"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
)

// One cell: redlock-5 under a minority partition, on a fresh local cluster.
func ExampleRunCell() {
	m, _ := matrix.FindMode(matrix.Modes, "redlock-5")
	s, _ := matrix.FindScenario(matrix.Scenarios, "partition-minority")
	row, h, err := matrix.RunCell(context.Background(), matrix.Cell{Mode: m, Scenario: s}, matrix.Quick, 1, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(row.Acquisitions, row.Violations, row.LostUpdates, row.Verdict, len(h.Ops))
}

// The whole matrix, as `quorumlock-lab chaos --quick` runs it.
func ExampleMain() {
	err := matrix.Main(context.Background(), matrix.Options{Modes: "all", Scenarios: "all", Quick: true, Parallel: 2, JSON: "out.json"},
		matrix.Modes, matrix.Scenarios, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Println(err) // wraps matrix.ErrViolation when a mode expected safe showed a violation
	}
}
