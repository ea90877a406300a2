package localredis_test

import (
	"context"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/localredis"
)

// Start runs a redis-server on a free loopback port in a temporary
// directory; Stop ends it and removes the directory. Pause and Resume
// freeze and thaw it (SIGSTOP, SIGCONT), as the fault tests do.
func ExampleStart() {
	ctx := context.Background()
	srv, err := localredis.Start(ctx, localredis.Config{Extra: []string{"maxmemory-policy noeviction"}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	rc := srv.Client()
	defer rc.Close()
	fmt.Println(rc.Ping(ctx).Val())
	fmt.Println(rc.ConfigGet(ctx, "maxmemory-policy").Val()["maxmemory-policy"])
	if err := srv.Pause(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused:", srv.Paused())
	if err := srv.Resume(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused:", srv.Paused())
	// Output:
	// PONG
	// noeviction
	// paused: true
	// paused: false
}
