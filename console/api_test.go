package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

// GET /api/locks is the page as JSON: holder label and id, how long it has
// been held, a fair lock's waiters, per-node states. /healthz says whether a
// quorum answers, 503 when not.
func TestAPIAndHealthz(t *testing.T) {
	servers, c := nodes(t, 3, quorum.WithTTL(5*time.Second), quorum.WithLabel("api-test"))
	ctx := t.Context()
	f, _ := c.FairMutex("fair/job")
	l, err := f.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		if l, err := f.Lock(wctx); err == nil {
			l.Unlock(context.Background())
		}
	}()
	defer func() { cancel(); <-waited }()

	con, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)

	var v apiView
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, srv, "/api/locks", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /api/locks: %d %s", code, body)
		}
		v = apiView{}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
		// The holder's client records its label in the background after
		// its first lease: wait for it too.
		if len(v.Locks) == 1 && v.Locks[0].Waiters == 1 && v.Locks[0].Holder == "api-test" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock with one waiter:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond) // poll: the waiter joins the line in the background
	}
	lk := v.Locks[0]
	if lk.Name != "fair/job" || lk.Verdict != "held" || lk.Holder != "api-test" || lk.HolderID == "" || strings.Contains(lk.HolderID, "api-test") ||
		lk.HeldFor == "" || lk.HeldSince.IsZero() || len(lk.Cells) != 3 || v.Quorum != 2 || len(v.Nodes) != 3 {
		t.Fatalf("api: %+v", v)
	}
	// The page shows the same.
	_, page := get(t, srv, "/", nil)
	for _, want := range []string{`class="num waiters">1<`, `class="num held-for">`, "api-test", `href="api/locks?"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	code, body := get(t, srv, "/healthz", map[string]string{"Host": "elsewhere.example"})
	if code != http.StatusOK || !strings.Contains(body, `"answered":3`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
	for _, s := range servers[1:] {
		s.Stop()
	}
	code, body = get(t, srv, "/healthz", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"ok":false`) {
		t.Fatalf("healthz with 2 of 3 down: %d %s", code, body)
	}
}

// An election shows as its lock, with the leader's value and term in
// place of the holder.
func TestAPIShowsElectionLeader(t *testing.T) {
	_, c := nodes(t, 3)
	e, err := c.Election("sched")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(t.Context(), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Unlock(context.Background())
	con, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	code, body := get(t, srv, "/api/locks", nil)
	var v apiView
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/locks: %d %v\n%s", code, err, body)
	}
	if len(v.Locks) != 1 || v.Locks[0].Name != quorum.ElectionPrefix+"sched" || v.Locks[0].Leader != "replica-a" ||
		v.Locks[0].Term != term.Token() || !strings.Contains(v.Locks[0].Holder, "term") {
		t.Fatalf("api: %s", body)
	}
	if _, page := get(t, srv, "/", nil); !strings.Contains(page, "replica-a (leader, term ") {
		t.Errorf("page does not show the leader:\n%s", page)
	}
}
