package guard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/guard"
	"github.com/quorumlock/quorumlock/quorum"
)

// Every write to the resource carries the lease's fencing token; a holder
// whose lease ended is refused and stops.
func ExampleRedis_Set() {
	ctx := context.Background()
	q, err := quorum.Dial("redis://127.0.0.1:7101,redis://127.0.0.1:7102,redis://127.0.0.1:7103", quorum.WithFencing(true))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	m, _ := q.Mutex("report-42")
	lease, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Unlock(ctx)

	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer store.Close()
	err = guard.NewRedis(store).Set(ctx, "report:42", lease.Token(), "rendered", 0)
	if errors.Is(err, guard.ErrStale) {
		fmt.Println("our lease ended and a newer holder wrote; stopping:", err)
	}
}

// The SQL guard updates a row only with a token at least as high as the
// row's: UPDATE accounts SET balance = $1, fence_token = $2 WHERE id = $3 AND
// fence_token <= $4.
func ExampleTable_Update() {
	ctx := context.Background()
	var db *sql.DB // sql.Open("pgx", …) with the driver of your choice
	var lease *quorum.Lease
	if db == nil || lease == nil {
		return
	}
	accounts := guard.Table{Name: "accounts"} // id, fence_token bigint NOT NULL DEFAULT 0
	err := accounts.Update(ctx, db, "acct-7", lease.Token(), map[string]any{"balance": 120})
	var stale *guard.StaleError
	if errors.As(err, &stale) {
		fmt.Printf("refused: token %d, the row already has %d\n", stale.Token, stale.Last)
	}
}
