package guard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Execer is what the SQL guard needs: *sql.DB, *sql.Tx and *sql.Conn have it.
// Inside a transaction the check, the write and the report of the last token
// are one consistent view.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Placeholder renders the n-th (1-based) bind parameter of a statement.
type Placeholder func(n int) string

// Dollar is PostgreSQL's $1, $2, … (also pgx, lib/pq).
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// Question is MySQL's and SQLite's ?.
func Question(int) string { return "?" }

// Table describes a table whose rows are fenced by a token column.
// Identifiers are used as given (not quoted) and must be plain names
// (letters, digits, underscores; a table may be schema.table).
type Table struct {
	// Name is the table.
	Name string
	// Key is the key column; default "id".
	Key string
	// Token is the token column, a 64-bit integer (bigint NOT NULL DEFAULT
	// 0: tokens are 16-digit numbers, a counter starts at the node's clock
	// in microseconds); default "fence_token".
	Token string
	// Placeholder renders bind parameters; default Dollar.
	Placeholder Placeholder
	// Strict refuses a token equal to the stored one (each token writes at
	// most once: "<" instead of "<="). Default false: a holder may write
	// several times under one lease.
	Strict bool
}

var (
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	tableRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
)

func (t Table) norm() (Table, error) {
	if t.Key == "" {
		t.Key = "id"
	}
	if t.Token == "" {
		t.Token = "fence_token"
	}
	if t.Placeholder == nil {
		t.Placeholder = Dollar
	}
	if !tableRe.MatchString(t.Name) {
		return t, fmt.Errorf("quorumlock: table name %q is not a plain identifier", t.Name)
	}
	for _, c := range []string{t.Key, t.Token} {
		if !identRe.MatchString(c) {
			return t, fmt.Errorf("quorumlock: column name %q is not a plain identifier", c)
		}
	}
	return t, nil
}

// UpdateSQL is the statement Update runs for the given columns (sorted), and
// the order of its arguments: the values, the token, the key, the token.
func (t Table) UpdateSQL(columns []string) (string, error) {
	t, err := t.norm()
	if err != nil {
		return "", err
	}
	if len(columns) == 0 {
		return "", errors.New("quorumlock: nothing to update")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", t.Name)
	n := 0
	for _, c := range columns {
		if !identRe.MatchString(c) {
			return "", fmt.Errorf("quorumlock: column name %q is not a plain identifier", c)
		}
		if c == t.Token || c == t.Key {
			return "", fmt.Errorf("quorumlock: column %q is the key or the token; the guard sets the token itself", c)
		}
		n++
		fmt.Fprintf(&b, "%s = %s, ", c, t.Placeholder(n))
	}
	op := "<="
	if t.Strict {
		op = "<"
	}
	fmt.Fprintf(&b, "%s = %s WHERE %s = %s AND %s %s %s",
		t.Token, t.Placeholder(n+1), t.Key, t.Placeholder(n+2), t.Token, op, t.Placeholder(n+3))
	return b.String(), nil
}

// Update sets the columns in set on the row whose key column is key, and the
// token column to token, only if the row's token is not above token (not
// equal either, when Strict). When the row was not changed it tells why: a
// *StaleError (errors.Is ErrStale) with the token the row has, or ErrNoRow.
func (t Table) Update(ctx context.Context, db Execer, key any, token int64, set map[string]any) error {
	if token <= 0 {
		return fmt.Errorf("quorumlock: token %d: a fencing token is positive (is WithFencing on?)", token)
	}
	cols := make([]string, 0, len(set))
	for c := range set {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	q, err := t.UpdateSQL(cols)
	if err != nil {
		return err
	}
	args := make([]any, 0, len(cols)+3)
	for _, c := range cols {
		args = append(args, set[c])
	}
	args = append(args, token, key, token)
	res, err := db.ExecContext(ctx, q, args...)
	if err = Fenced(res, err); !errors.Is(err, ErrStale) {
		return err
	}
	// Nothing changed: a newer token, or no such row.
	t, _ = t.norm()
	var last sql.NullInt64
	err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s", t.Token, t.Name, t.Key, t.Placeholder(1)), key).Scan(&last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s with %s = %v", ErrNoRow, t.Name, t.Key, key)
	case err != nil:
		return fmt.Errorf("quorumlock: write refused, and reading the token failed: %w", err)
	case !last.Valid:
		return fmt.Errorf("quorumlock: %s.%s is NULL for %v: make the column NOT NULL DEFAULT 0", t.Name, t.Token, key)
	}
	return &StaleError{Key: fmt.Sprintf("%s %v", t.Name, key), Token: token, Last: last.Int64}
}

// Fenced turns the result of a hand-written fenced statement (see the
// package doc) into an error: ErrStale when it changed no row (a newer token
// was there, or the row does not exist), err when it failed.
func Fenced(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("quorumlock: rows affected: %w", err)
	}
	if n == 0 {
		return ErrStale
	}
	return nil
}
