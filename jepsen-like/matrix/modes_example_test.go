package matrix_test

import (
	"fmt"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
)

// Modes and scenarios are plain values in two lists; a cell is one of each.
// FindMode and FindScenario look them up by the names the command line uses.
func ExampleFindMode() {
	m, ok := matrix.FindMode(matrix.Modes, "redlock-5")
	fmt.Println(ok, m.ID, m.Nodes(), m.Majority, m.Fencing)
	_, ok = matrix.FindMode(matrix.Modes, "no-such-mode")
	fmt.Println(ok)
	s, ok := matrix.FindScenario(matrix.Scenarios, "partition-minority")
	fmt.Println(ok, s.ID)
	// Output:
	// true redlock-5 5 true false
	// false
	// true partition-minority
}
