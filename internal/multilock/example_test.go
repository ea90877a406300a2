package multilock_test

import (
	"fmt"

	"github.com/quorumlock/quorumlock/internal/multilock"
)

// The core driven over in-memory sub-locks is the public package's example
// (multilock.ExampleMultiLock_Acquire); this one shows what only the
// internal package exports.

// The policies' arithmetic: how many of n sub-locks must grant.
func ExampleNeed() {
	for _, n := range []int{1, 3, 5} {
		fmt.Printf("n=%d: majority %d, all %d\n", n, multilock.Need(multilock.Majority, n), multilock.Need(multilock.All, n))
	}
	// Output:
	// n=1: majority 1, all 1
	// n=3: majority 2, all 3
	// n=5: majority 3, all 5
}
