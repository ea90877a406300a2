package fanout

import (
	"errors"
	"fmt"
	"testing"
)

func TestAllKeepsEveryErrorInItsSlot(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			done := make([]bool, n)
			errs := All(n, func(i int) error {
				done[i] = true
				if i%2 == 1 {
					return fmt.Errorf("node %d", i)
				}
				return nil
			})
			if len(errs) != n {
				t.Fatalf("%d errors for %d calls", len(errs), n)
			}
			for i := range n {
				if !done[i] {
					t.Errorf("call %d did not run", i)
				}
				if (errs[i] != nil) != (i%2 == 1) {
					t.Errorf("slot %d: %v", i, errs[i])
				}
			}
		})
	}
}

func ExampleAll() {
	nodes := []string{"n1", "n2", "n3"}
	errs := All(len(nodes), func(i int) error {
		if nodes[i] == "n2" {
			return errors.New("n2: i/o timeout")
		}
		return nil
	})
	fmt.Println(errors.Join(errs...))
	// Output: n2: i/o timeout
}
