package chaos_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

// Five masters behind an embedded toxiproxy; a fixed schedule partitions one
// and pauses another while a workload runs against the proxy addresses.
func Example() {
	ctx := context.Background()
	c, err := chaos.Start(ctx, chaos.Topology{Masters: 5})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("nodes:", c.Addrs(), "toxiproxy API:", c.ToxiproxyURL())

	clients := c.Clients() // one go-redis client per master, through its proxy
	defer func() {
		for _, cl := range clients {
			_ = cl.Close()
		}
	}()

	rec := chaos.NewRecorder()
	sched := chaos.Schedule{
		{At: 1 * time.Second, Hold: 2 * time.Second, Fault: &chaos.Partition{Proxy: c.Masters[0].Proxy()}},
		{At: 2 * time.Second, Hold: 2 * time.Second, Fault: &chaos.Pause{Node: c.Masters[1]}},
	}
	done := make(chan error, 1)
	go func() { done <- sched.Run(ctx, rec) }()
	// ... run the workload against clients here ...
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	for _, w := range rec.Windows() {
		fmt.Printf("%s from %s to %s\n", w.Fault, w.From.Format(time.StampMilli), w.To.Format(time.StampMilli))
	}
}

// A seeded nemesis over the usual faults of every master; the same seed
// replays the same moves.
func ExampleNemesis() {
	ctx := context.Background()
	c, err := chaos.Start(ctx, chaos.Topology{Masters: 3, Persistence: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	var faults []chaos.Fault
	for _, m := range c.Masters {
		faults = append(faults, chaos.NodeFaults(m)...)
	}
	rec := chaos.NewRecorder()
	n := &chaos.Nemesis{Seed: 42, Faults: faults, Recorder: rec}
	for _, m := range n.Moves(3) {
		fmt.Printf("after %v: %v for %v\n", m.Rest, faults[m.Fault], m.Hold)
	}
	runCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.Run(runCtx); err != nil { // heals the last fault before returning
		fmt.Println(err)
	}
	for _, e := range rec.Events() {
		fmt.Println(e)
	}
}

// The workload consults a ClientPause between acquiring and writing; the
// schedule holds it longer than the lock's TTL.
func ExampleClientPause() {
	pause := &chaos.ClientPause{Name: "worker-1"}
	worker := func(ctx context.Context) error {
		// lease, err := mutex.TryLock(ctx) ...
		if err := pause.Wait(ctx); err != nil { // blocks while the fault is injected
			return err
		}
		// write with the (possibly expired) lease's token ...
		return nil
	}
	sched := chaos.Schedule{{At: 100 * time.Millisecond, Hold: 10 * time.Second, Fault: pause}}
	ctx := context.Background()
	go func() { _ = sched.Run(ctx, nil) }()
	_ = worker(ctx)
}

// A cluster that runs elsewhere: docker compose up -d, then the same faults
// over toxiproxy's HTTP API.
func ExampleConnect() {
	ctx := context.Background()
	c, err := chaos.Connect(ctx, chaos.ComposeEndpoints("127.0.0.1", "docker-compose.yml"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	f := &chaos.SentinelFailover{Group: c.Groups[0]}
	if err := f.Inject(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("new master:", c.Groups[0].Master().Name())
	_ = f.Recover(ctx)
}
