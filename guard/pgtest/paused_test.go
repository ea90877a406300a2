package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/guard"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// The case fencing exists for: holder A stalls (a GC pause) past its lease;
// B gets the lock with a larger token and writes; A wakes up and writes with
// its old token. Both guards refuse A and say which token won.
func pausedHolder(t *testing.T, db *sql.DB) {
	ctx := t.Context()
	_, clients := testutil.Servers(t, 3, localredis.Config{})
	q, err := quorum.New(clients, quorum.WithFencing(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	const lease = 300 * time.Millisecond
	m, err := q.Mutex("account-7", quorum.WithLeaseTime(lease))
	if err != nil {
		t.Fatal(err)
	}

	store := localredis.StartT(t, localredis.Config{})
	sc := store.Client()
	t.Cleanup(func() { _ = sc.Close() })
	rg := guard.NewRedis(sc)
	if _, err := db.ExecContext(ctx, `CREATE TABLE ledger (id int PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0);
		INSERT INTO ledger (id, balance) VALUES (7, 0)`); err != nil {
		t.Fatal(err)
	}
	ledger := guard.Table{Name: "ledger"}

	a, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A stalls: its lease ends while it is not looking.
	<-a.Done()
	if !errors.Is(a.Err(), quorum.ErrLeaseExpired) {
		t.Fatalf("A's lease ended with %v", a.Err())
	}
	b, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() <= a.Token() {
		t.Fatalf("tokens A %d, B %d: want B's larger", a.Token(), b.Token())
	}
	if err := rg.Set(ctx, "account:7", b.Token(), "B", 0); err != nil {
		t.Fatalf("B's Redis write: %v", err)
	}
	if err := ledger.Update(ctx, db, 7, b.Token(), map[string]any{"balance": 200}); err != nil {
		t.Fatalf("B's SQL write: %v", err)
	}
	_ = b.Unlock(ctx)

	// A wakes up and writes with its old token.
	var se *guard.StaleError
	err = rg.Set(ctx, "account:7", a.Token(), "A", 0)
	if !errors.As(err, &se) || se.Last != b.Token() {
		t.Fatalf("the paused holder's Redis write: %v, want refused with last token %d", err, b.Token())
	}
	err = ledger.Update(ctx, db, 7, a.Token(), map[string]any{"balance": 100})
	if !errors.As(err, &se) || se.Last != b.Token() {
		t.Fatalf("the paused holder's SQL write: %v, want refused with last token %d", err, b.Token())
	}
	t.Logf("refused: %v", err)
	if v, _ := sc.Get(ctx, "account:7").Result(); v != "B" {
		t.Fatalf("Redis value %q, want B's", v)
	}
	var bal int64
	if err := db.QueryRowContext(context.Background(), "SELECT balance FROM ledger WHERE id = 7").Scan(&bal); err != nil || bal != 200 {
		t.Fatalf("SQL balance %d (%v), want B's 200", bal, err)
	}
}
