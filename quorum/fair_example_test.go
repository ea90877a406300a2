package quorum_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

// A FairMutex serves waiters in the order they arrived, whichever client
// they run in: here three workers queue behind a holder and get the lock
// one after the other, in the order they called Lock. The lease is the same
// as a Mutex's (watchdog, Unlock, Token, Done).
func ExampleFairMutex_Lock() {
	_, nodes, stop := startNodes(5)
	defer stop()
	ctx := context.Background()

	client, err := quorum.New(nodes, quorum.WithTTL(5*time.Second)) // also the queue timeout
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	f, err := client.FairMutex("payouts")
	if err != nil {
		log.Fatal(err)
	}
	holder, err := f.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := f.Lock(ctx) // waits in line
			if err != nil {
				log.Print(err)
				return
			}
			defer lease.Unlock(ctx)
			fmt.Println("worker", i, "holds the lock")
		}()
		time.Sleep(50 * time.Millisecond) // arrive one after the other
	}
	_ = holder.Unlock(ctx) // wakes exactly the first waiter
	wg.Wait()
}

// TryLock on a FairMutex takes no ticket and never passes a waiter: it is
// granted only when the lock is free and nobody is in line.
func ExampleFairMutex_TryLock() {
	_, nodes, stop := startNodes(3)
	defer stop()
	ctx := context.Background()
	client, err := quorum.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	f, err := client.FairMutex("report")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := f.TryLock(ctx)
	if err != nil {
		fmt.Println("busy or someone is waiting:", err)
		return
	}
	defer lease.Unlock(ctx)
	fmt.Println("got it without waiting")
}
