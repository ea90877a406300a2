package pgtest

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/quorumlock/quorumlock/guard"
)

// Against a real PostgreSQL: the row keeps the highest fencing token that
// wrote it, so a paused holder's late write with an older token is refused
// and told the row's token.
func Example() {
	db, stop, err := launchPostgres()
	if err != nil {
		log.Fatal(err) // the server binaries are needed here, as in CI
	}
	defer stop()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0);
		INSERT INTO accounts (id, balance) VALUES ('acct-7', 0)`); err != nil {
		log.Fatal(err)
	}
	accounts := guard.Table{Name: "accounts"}
	fmt.Println(accounts.Update(ctx, db, "acct-7", 9, map[string]any{"balance": 120}))
	err = accounts.Update(ctx, db, "acct-7", 8, map[string]any{"balance": 100})
	var stale *guard.StaleError
	fmt.Println(errors.Is(err, guard.ErrStale), errors.As(err, &stale) && stale.Last == 9)
	var balance, token int64
	_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 'acct-7'").Scan(&balance, &token)
	fmt.Println(balance, token)
	// Output:
	// <nil>
	// true true
	// 120 9
}
