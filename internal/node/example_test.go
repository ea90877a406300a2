package node_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/localredis"
)

// One node, two owners: the first attempt is granted, the second is
// refused and told how long the holder's claim lasts; the node's state
// shows the holder until it releases.
func ExampleLock_Acquire() {
	ctx := context.Background()
	srv, err := localredis.Start(ctx, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	rc := srv.Client()
	defer rc.Close()
	n, err := node.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()

	alice := n.Lock("orders/42", "alice", "attempt-1", false)
	granted, _, _, err := alice.Acquire(ctx, 10*time.Second)
	fmt.Println("alice:", granted, err)

	granted, remaining, _, err := n.Lock("orders/42", "bob", "attempt-2", false).Acquire(ctx, 10*time.Second)
	fmt.Println("bob:", granted, err, "claim left > 9s:", remaining > 9*time.Second)

	st, _ := n.Inspect(ctx, "orders/42")
	fmt.Println("holders:", st.Holders)

	released, err := alice.Release(ctx)
	st, _ = n.Inspect(ctx, "orders/42")
	fmt.Println("released:", released, err, "present:", st.Present)
	// Output:
	// alice: true <nil>
	// bob: false <nil> claim left > 9s: true
	// holders: map[alice:1]
	// released: true <nil> present: false
}

// Keys are the Redis names of one lock; they share the hash tag {name}, so
// a Cluster keeps them in one slot.
func ExampleNode_Keys() {
	rc := redis.NewClient(node.Options("127.0.0.1:6379")) // New does not dial
	defer rc.Close()
	n, err := node.New(rc, node.WithPrefix("billing:"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Name())
	k := n.Keys("orders/42")
	fmt.Println(k.Lock)
	fmt.Println(k.Fence)
	fmt.Println(k.Channel)
	// Output:
	// 127.0.0.1:6379
	// billing:{orders/42}
	// billing:{orders/42}:fence
	// billing:{orders/42}:unlock
}
