package console_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/quorum"
)

// Serve the console of the nodes in $QUORUMLOCK_NODES on loopback until
// interrupted. A non-loopback address needs WithToken.
func Example() {
	c, err := quorum.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	con, err := console.New(c, console.WithToken(os.Getenv(console.EnvToken)))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := con.Listen("127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log.Printf("console on http://%s/", ln.Addr())
	if err := con.Serve(ctx, ln); err != nil {
		log.Fatal(err)
	}
}
