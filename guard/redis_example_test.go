package guard_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/guard"
	"github.com/quorumlock/quorumlock/localredis"
)

// The resource's Redis keeps the highest token it accepted per key: a
// write with an older token (from a holder whose lease ended while a newer
// holder wrote) is refused with a *StaleError.
func ExampleNewRedis() {
	ctx := context.Background()
	srv, err := localredis.Start(ctx, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	store := srv.Client()
	defer store.Close()
	g := guard.NewRedis(store)

	fmt.Println(g.Set(ctx, "report:42", 7, "rendered by the new holder", 0))
	err = g.Set(ctx, "report:42", 6, "rendered by the old holder", 0)
	var stale *guard.StaleError
	fmt.Println(errors.Is(err, guard.ErrStale), errors.As(err, &stale) && stale.Last == 7)
	last, _ := g.Last(ctx, "report:42")
	fmt.Println(store.Get(ctx, "report:42").Val(), last)
	// Output:
	// <nil>
	// true true
	// rendered by the new holder 7
}
