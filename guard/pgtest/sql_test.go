package pgtest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/quorumlock/quorumlock/guard"
)

// Against a real PostgreSQL (one server for both tests).
func TestPostgres(t *testing.T) {
	db := startPostgres(t)
	t.Run("update", func(t *testing.T) { sqlUpdate(t, db) })
	t.Run("paused holder is refused by both guards", func(t *testing.T) { pausedHolder(t, db) })
}

// A newer token wins, an older one is refused and told the token the row
// has, an equal one is allowed unless Strict, a missing row says so; inside
// a transaction too.
func sqlUpdate(t *testing.T, db *sql.DB) {
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0);
		INSERT INTO accounts (id, balance) VALUES ('a', 0), ('b', 0)`); err != nil {
		t.Fatal(err)
	}
	accounts := guard.Table{Name: "accounts"}
	strict := guard.Table{Name: "accounts", Strict: true}
	balance := func(id string) (b, tok int64) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = $1", id).Scan(&b, &tok); err != nil {
			t.Fatal(err)
		}
		return b, tok
	}
	steps := []struct {
		table   guard.Table
		id      string
		token   int64
		balance int64
		want    error
		last    int64
	}{
		{accounts, "a", 5, 100, nil, 0},
		{accounts, "a", 5, 110, nil, 0}, // same holder writes again
		{strict, "a", 5, 120, guard.ErrStale, 5},
		{accounts, "a", 4, 130, guard.ErrStale, 5}, // a paused older holder
		{accounts, "a", 9, 140, nil, 0},
		{accounts, "zz", 9, 1, guard.ErrNoRow, 0},
	}
	for i, s := range steps {
		err := s.table.Update(ctx, db, s.id, s.token, map[string]any{"balance": s.balance})
		if !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
			t.Fatalf("step %d: %v, want %v", i, err, s.want)
		}
		var se *guard.StaleError
		if errors.As(err, &se) && se.Last != s.last {
			t.Fatalf("step %d: %v: last %d, want %d", i, err, se.Last, s.last)
		}
	}
	if b, tok := balance("a"); b != 140 || tok != 9 {
		t.Fatalf("row a: balance %d token %d, want 140 9", b, tok)
	}

	// In a transaction, and the hand-written pattern with guard.Fenced.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := accounts.Update(ctx, tx, "b", 3, map[string]any{"balance": 7}); err != nil {
		t.Fatal(err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = $1, fence_token = $2 WHERE id = $3 AND fence_token < $2`, 8, 2, "b")
	if err := guard.Fenced(res, err); !errors.Is(err, guard.ErrStale) {
		t.Fatalf("hand-written fenced UPDATE with an older token: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, tok := balance("b"); b != 7 || tok != 3 {
		t.Fatalf("row b: balance %d token %d, want 7 3", b, tok)
	}
}
