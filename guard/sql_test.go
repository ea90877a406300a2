package guard

import (
	"database/sql"
	"errors"
	"testing"
)

func TestUpdateSQL(t *testing.T) {
	cases := []struct {
		name  string
		table Table
		cols  []string
		want  string
		bad   bool
	}{
		{"postgres", Table{Name: "accounts"}, []string{"balance", "note"},
			"UPDATE accounts SET balance = $1, note = $2, fence_token = $3 WHERE id = $4 AND fence_token <= $5", false},
		{"mysql strict", Table{Name: "app.jobs", Key: "job_id", Token: "tok", Placeholder: Question, Strict: true}, []string{"state"},
			"UPDATE app.jobs SET state = ?, tok = ? WHERE job_id = ? AND tok < ?", false},
		{"injection in a name", Table{Name: "a; DROP TABLE b"}, []string{"x"}, "", true},
		{"injection in a column", Table{Name: "a"}, []string{"x = 1 --"}, "", true},
		{"setting the token", Table{Name: "a"}, []string{"fence_token"}, "", true},
		{"nothing to set", Table{Name: "a"}, nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.table.UpdateSQL(tc.cols)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

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
	accounts := Table{Name: "accounts"}
	strict := Table{Name: "accounts", Strict: true}
	balance := func(id string) (b, tok int64) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = $1", id).Scan(&b, &tok); err != nil {
			t.Fatal(err)
		}
		return b, tok
	}
	steps := []struct {
		table   Table
		id      string
		token   int64
		balance int64
		want    error
		last    int64
	}{
		{accounts, "a", 5, 100, nil, 0},
		{accounts, "a", 5, 110, nil, 0}, // same holder writes again
		{strict, "a", 5, 120, ErrStale, 5},
		{accounts, "a", 4, 130, ErrStale, 5}, // a paused older holder
		{accounts, "a", 9, 140, nil, 0},
		{accounts, "zz", 9, 1, ErrNoRow, 0},
	}
	for i, s := range steps {
		err := s.table.Update(ctx, db, s.id, s.token, map[string]any{"balance": s.balance})
		if !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
			t.Fatalf("step %d: %v, want %v", i, err, s.want)
		}
		var se *StaleError
		if errors.As(err, &se) && se.Last != s.last {
			t.Fatalf("step %d: %v: last %d, want %d", i, err, se.Last, s.last)
		}
	}
	if b, tok := balance("a"); b != 140 || tok != 9 {
		t.Fatalf("row a: balance %d token %d, want 140 9", b, tok)
	}

	// In a transaction, and the hand-written pattern with Fenced.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := accounts.Update(ctx, tx, "b", 3, map[string]any{"balance": 7}); err != nil {
		t.Fatal(err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = $1, fence_token = $2 WHERE id = $3 AND fence_token < $2`, 8, 2, "b")
	if err := Fenced(res, err); !errors.Is(err, ErrStale) {
		t.Fatalf("hand-written fenced UPDATE with an older token: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, tok := balance("b"); b != 7 || tok != 3 {
		t.Fatalf("row b: balance %d token %d, want 7 3", b, tok)
	}
}
