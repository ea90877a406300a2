package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/quorum"
)

// Inspect tells what every node knows of a lock and concludes a verdict; List
// finds the locks (with SCAN) and inspects each. An operator's ForceUnlock is
// recorded, and a later Inspect shows who did it. (The All policy makes
// Lock return once every node granted, so the output does not depend on a
// last node still answering.)
func ExampleClient_Inspect() {
	_, nodes, stop := startNodes(3)
	defer stop()
	c, err := quorum.New(nodes, quorum.WithPolicy(quorum.All))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ins, _ := c.Inspect(ctx, "orders/42")
	fmt.Println(ins.Verdict, ins.Holders, "quorum", ins.Quorum, "answered", ins.Answered)

	list, _ := c.List(ctx, "orders/*")
	for _, in := range list {
		fmt.Println("listed:", in.Name, in.Verdict)
	}

	if _, err := c.ForceUnlock(ctx, "orders/42", "alice"); err != nil {
		log.Fatal(err)
	}
	ins, _ = c.Inspect(ctx, "orders/42")
	fmt.Println(ins.Verdict, "forced by", ins.Forced.By)
	fmt.Println(errors.Is(lease.Unlock(ctx), quorum.ErrNotHeld))
	// Output:
	// held [worker-1] quorum 3 answered 3
	// listed: orders/42 held
	// free forced by alice
	// true
}

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
	err = quorum.Do(context.Background(), m, func(ctx context.Context) error {
		// ... work under the lock, stopping when ctx is done ...
		return errBusy
	})
	fmt.Println(errors.Is(err, errBusy))
	ins, _ := c.Inspect(context.Background(), "report")
	fmt.Println(ins.Verdict)
	// Output:
	// true
	// free
}
