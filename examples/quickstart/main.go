package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	nodes := os.Getenv("QUORUMLOCK_NODES") // independent nodes: redis://a:6379,redis://b:6379,...
	if nodes == "" {
		nodes = "redis://127.0.0.1:7400,redis://127.0.0.1:7401,redis://127.0.0.1:7402" // docker compose up
	}
	client, err := quorum.Dial(nodes)
	if err != nil {
		return err
	}
	defer client.Close()
	mu, err := client.Mutex("orders/42")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := mu.Lock(ctx) // waits until it is free; TryLock tries once
	if errors.Is(err, quorum.ErrTaken) {
		return fmt.Errorf("busy, another owner held it: %w", err)
	} else if errors.Is(err, quorum.ErrNotObtained) {
		return fmt.Errorf("fewer than a quorum of nodes answered: %w", err)
	} else if err != nil {
		return err
	}
	defer lease.Unlock(context.WithoutCancel(ctx))
	// The watchdog renews the lease; lease.Context() ends if it is lost. Hand
	// the token to the resource, which refuses any lower than the last it saw
	// (package guard does that in Redis or SQL).
	fmt.Printf("orders/42 is ours, fencing token %d\n", lease.Token())
	return lease.Context().Err() // do the work on lease.Context()
}
