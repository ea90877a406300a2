package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/quorum"
)

// Do runs a function while holding the lock: its context ends if the lease is
// lost, and the lock is released however the function returns. (With All,
// Unlock returns once every node released, so Inspect right after sees none.)
func ExampleDo() {
	_, nodes, stop := startNodes(3)
	defer stop()
	c, err := quorum.New(nodes, quorum.WithPolicy(quorum.All))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m, _ := c.Mutex("report")
	errBusy := errors.New("backend busy")
	err = quorum.Do(context.Background(), m.Lock, func(ctx context.Context, lease *quorum.Lease) error {
		// ... work under the lock, stopping when ctx is done ...
		return errBusy
	})
	fmt.Println(errors.Is(err, errBusy))
	ins, _ := c.Admin().Inspect(context.Background(), "report")
	fmt.Println(ins.Verdict)
	// Output:
	// true
	// free
}
