package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// Many readers or one writer, on a quorum. With WithOwner the writer may
// also read (and readers may re-enter).
func ExampleClient_RWMutex() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes, quorum.WithFencing(true))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	rw, err := client.RWMutex("catalog")
	if err != nil {
		log.Fatal(err)
	}

	r1, _ := rw.RLock(ctx)
	r2, err := rw.RLock(ctx) // granted at once: readers share
	fmt.Println("two readers at once:", err == nil)
	_, err = rw.TryLock(ctx)
	fmt.Println("writer while they read:", errors.Is(err, quorum.ErrNotObtained))
	r1.Unlock(ctx)
	r2.Unlock(ctx)

	w, err := rw.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("writer after them, token > 0:", w.Token() > 0)
	w.Unlock(ctx)
	// Output:
	// two readers at once: true
	// writer while they read: true
	// writer after them, token > 0: true
}

// A per-node durability gate for nodes that are master + replica groups: a
// node's grant counts only once a replica acknowledged it (WAIT 1 20ms in
// the same round trip). The lease report says why a node did not vote.
func ExampleWithReplicaAck() {
	client, err := quorum.Dial("redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379",
		quorum.WithReplicaAck(1, 20*time.Millisecond), quorum.WithAttemptTimeout(300*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("payouts")
	lease, err := m.Lock(context.Background())
	if err != nil {
		// Each node's reason is in the error: one wrapping quorum.ErrNotReplicated when its
		// replicas did not acknowledge.
		log.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	fmt.Print(lease.Report())
}

// Restart detection (a client-enforced delayed restart): a node that
// restarted, or has been up for less than the largest TTL in use, does not
// vote until it has been up that long.
func ExampleWithRestartDetection() {
	client, err := quorum.Dial("redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379",
		quorum.WithRestartDetection(true), quorum.WithPreflight(admin.Problem))
	if err != nil {
		// With WithPreflight, an *admin.PreflightError lists what is wrong.
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("payouts")
	_, err = m.TryLock(context.Background())
	if errors.Is(err, quorum.ErrNodeRestarted) {
		fmt.Println("a node sits out:", err)
	}
}
