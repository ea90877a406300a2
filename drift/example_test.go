package drift_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/drift"
)

// A lease of 10 s gives up 1% plus 2 ms to clock drift; what is left after
// the acquisition took 40 ms is its validity. An acquisition that outlasts
// the TTL leaves none.
func ExampleValidity() {
	ttl := 10 * time.Second
	fmt.Println(drift.Allowance(ttl, drift.DefaultFactor))
	fmt.Println(drift.Validity(ttl, 40*time.Millisecond, drift.DefaultFactor))
	fmt.Println(drift.Validity(ttl, 11*time.Second, drift.DefaultFactor))
	// Output:
	// 102ms
	// 9.858s
	// 0s
}

// Check refuses settings under which no lease could ever be valid.
func ExampleCheck() {
	fmt.Println(drift.Check(10*time.Second, drift.DefaultFactor))
	fmt.Println(drift.Check(2*time.Millisecond, drift.DefaultFactor))
	// Output:
	// <nil>
	// quorumlock: ttl 2ms is not larger than its drift allowance 2.02ms; use a ttl of at least 3.02ms
}

// A Fake clock moves only when told, so validity arithmetic can be tested
// without sleeping.
func ExampleFake() {
	clk := drift.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	clk.Advance(250 * time.Millisecond)
	fmt.Println(clk.Now().Sub(start))
	// Output: 250ms
}
