package quorum_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/quorum"
)

// Two replicas campaign for "scheduler": the first is elected, the second
// waits until the first resigns (woken by pub/sub) and gets a higher term.
// The term number is a fencing token: pass it with every write.
func ExampleElection_Campaign() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()

	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := client.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}

	first, err := e.Campaign(ctx, "replica-a")
	if err != nil {
		log.Fatal(err)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", leader.Value, "same term:", leader.Token == first.Token())

	elected := make(chan *quorum.Term)
	go func() {
		t, err := e.Campaign(ctx, "replica-b")
		if err != nil {
			log.Fatal(err)
		}
		elected <- t
	}()
	if err := first.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	second := <-elected
	fmt.Println("leader:", second.Value(), "higher term:", second.Token() > first.Token())
	if err := second.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// leader: replica-a same term: true
	// leader: replica-b higher term: true
}

// RunLeader runs the leader's work while this replica leads and campaigns
// again when the term is lost. Here the work ends the run by cancelling.
func ExampleRunLeader() {
	_, nodes, stop := startNodes(3)
	defer stop()

	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := client.Election("compactor")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = quorum.RunLeader(ctx, e, "replica-a", func(ctx context.Context, t *quorum.Term) error {
		fmt.Println("leading with", t.Value())
		cancel() // e.g. shutting down; a lost term ends ctx too
		<-ctx.Done()
		return ctx.Err()
	})
	fmt.Println("stopped:", err != nil)
	// Output:
	// leading with replica-a
	// stopped: true
}
