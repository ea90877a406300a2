package admin_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// startNodes starts n local redis-servers for an example and returns their
// clients and a function that stops everything.
func startNodes(n int) ([]redis.UniversalClient, func()) {
	servers, err := localredis.StartN(context.Background(), n, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	clients := make([]redis.UniversalClient, n)
	for i, s := range servers {
		clients[i] = s.Client()
	}
	return clients, func() {
		for _, c := range clients {
			c.Close()
		}
		localredis.StopAll(servers)
	}
}

// Inspect tells what every node knows of a lock and concludes a verdict; List
// finds the locks (with SCAN) and inspects each. An operator's ForceUnlock is
// recorded, and a later Inspect shows who did it. (The All policy makes
// Lock return once every node granted, so the output does not depend on a
// last node still answering.)
func ExampleTools_Inspect() {
	nodes, stop := startNodes(3)
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
	ins, _ := c.Admin().Inspect(ctx, "orders/42")
	fmt.Println(ins.Verdict, ins.Holders, "quorum", ins.Quorum, "answered", ins.Answered)

	list, _ := c.Admin().List(ctx, "orders/*")
	for _, in := range list {
		fmt.Println("listed:", in.Name, in.Verdict)
	}

	if _, err := c.Admin().ForceUnlock(ctx, "orders/42", "alice"); err != nil {
		log.Fatal(err)
	}
	ins, _ = c.Admin().Inspect(ctx, "orders/42")
	fmt.Println(ins.Verdict, "forced by", ins.Forced.By)
	fmt.Println(errors.Is(lease.Unlock(ctx), quorum.ErrNotHeld))
	// Output:
	// held [worker-1] quorum 3 answered 3
	// listed: orders/42 held
	// free forced by alice
	// true
}

// Check is the preflight check: a report a person can read. quorum.New can be
// told to refuse a bad setup with quorum.WithPreflight.
func ExampleTools_Check() {
	nodes, stop := startNodes(3)
	defer stop()
	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	report, err := client.Admin().Check(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("problems:", report.Count(admin.Problem))
	fmt.Println("worst:", report.Worst()) // local test servers run fsync-always AOF, noeviction
	// Output:
	// problems: 0
	// worst: ok
}
