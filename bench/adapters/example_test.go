package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/adapters"
	"github.com/quorumlock/quorumlock/localredis"
)

// Every implementation is driven through one Maker interface, so the
// benchmarks and the chaos matrix compare them on the same workload: here
// each takes a lock, a second TryLock is refused, and the lock is given back.
// The quorum locks use three nodes; the single-node ones refuse more and get
// the first.
func ExampleNew() {
	ctx := context.Background()
	servers, err := localredis.StartN(ctx, 3, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer localredis.StopAll(servers)
	clients := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		rc := s.Client()
		defer rc.Close()
		clients[i] = rc
	}
	for _, kind := range adapters.Kinds {
		l, err := adapters.New(clients, adapters.Config{Kind: kind})
		if errors.Is(err, adapters.ErrUnsupported) {
			l, err = adapters.New(clients[:1], adapters.Config{Kind: kind}) // a single-node lock
		}
		if err != nil {
			log.Fatal(err)
		}
		m, err := l.Mutex("example-" + string(kind))
		if err != nil {
			log.Fatal(err)
		}
		lease, err := m.TryLock(ctx)
		if err != nil {
			log.Fatal(err)
		}
		_, err = m.TryLock(ctx)
		fmt.Println(kind, "second TryLock refused:", errors.Is(err, adapters.ErrNotObtained), "unlock:", lease.Unlock(ctx))
		l.Close()
	}
	// Output:
	// quorumlock second TryLock refused: true unlock: <nil>
	// redsync second TryLock refused: true unlock: <nil>
	// redislock second TryLock refused: true unlock: <nil>
	// raw second TryLock refused: true unlock: <nil>
	// rueidislock second TryLock refused: true unlock: <nil>
}
