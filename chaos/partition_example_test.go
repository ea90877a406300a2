package chaos_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

// A silent partition of one master: its client, talking through the
// node's proxy, gets no answer until Recover heals the cut; the other
// masters answer throughout.
func ExamplePartition() {
	ctx := context.Background()
	c, err := chaos.Start(ctx, chaos.Topology{Masters: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	clients := c.Clients()
	defer func() {
		for _, cl := range clients {
			_ = cl.Close()
		}
	}()
	ping := func(i int) error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return clients[i].Ping(pctx).Err()
	}

	cut := &chaos.Partition{Proxy: c.Masters[0].Proxy()}
	if err := cut.Inject(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(cut, "m0 answers:", ping(0) == nil, "m1 answers:", ping(1) == nil)
	if err := cut.Recover(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("healed, m0 answers:", ping(0) == nil)
	// Output:
	// partition(m0) m0 answers: false m1 answers: true
	// healed, m0 answers: true
}

// FaketimeSpec is the FAKETIME value of a clock fault: an offset and a rate
// (none when the clock runs at the normal rate).
func ExampleFaketimeSpec() {
	fmt.Println(chaos.FaketimeSpec(time.Hour, 2))
	fmt.Println(chaos.FaketimeSpec(-30*time.Second, 0))
	// Output:
	// +3600 x2
	// -30
}
