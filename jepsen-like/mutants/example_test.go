package mutants_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/quorumlock/quorumlock/jepsen-like/mutants"
)

// A mutant is a text patch of one library file: Apply replaces Old (which
// must occur exactly once) with New. The runner applies each mutant to a
// copy of the repository and runs the cells that should catch it.
func ExampleMutant_Apply() {
	root, err := os.MkdirTemp("", "mutant-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	file := filepath.Join(root, "drift", "drift.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		log.Fatal(err)
	}
	src := "func Allowance(ttl time.Duration, factor float64) time.Duration {\n\treturn time.Duration(float64(ttl)*factor) + Granularity\n}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		log.Fatal(err)
	}
	m := mutants.Mutant{
		Name: "no-drift",
		Bug:  "no drift allowance",
		File: "drift/drift.go",
		Old:  "\treturn time.Duration(float64(ttl)*factor) + Granularity\n",
		New:  "\treturn 0\n",
	}
	fmt.Println(m.Apply(root))
	out, _ := os.ReadFile(file)
	fmt.Print(string(out))
	fmt.Println(m.Apply(root) != nil) // Old is gone: a second Apply fails
	// Output:
	// <nil>
	// func Allowance(ttl time.Duration, factor float64) time.Duration {
	// 	return 0
	// }
	// true
}
