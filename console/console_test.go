package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// nodes starts n redis-server processes and a quorum client over them.
func nodes(t *testing.T, n int, opts ...quorum.Option) ([]*localredis.Server, *quorum.Client) {
	t.Helper()
	servers, clients := testutil.Servers(t, n, localredis.Config{})
	c, err := quorum.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return servers, c
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.3.4.5:0", "", true},
		{"[::1]:8080", "", true},
		{"localhost:8080", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"10.1.2.3:8080", "", false},
		{"example.com:8080", "", false},
		{"0.0.0.0:8080", "0123456789abcdef", true},
		{"0.0.0.0:8080", "s3cret", false},
		{"0.0.0.0:8080", " ", false},
		{"0.0.0.0:8080", "0123456789 abcde", false},
		{"127.0.0.1:8080", "s3cret", true},
		{"nonsense", "0123456789abcdef", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr+"/"+tt.token, func(t *testing.T) {
			err := CheckListen(tt.addr, tt.token)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckListen(%q, %q) = %v, want ok %v", tt.addr, tt.token, err, tt.ok)
			}
			want := ErrNeedToken
			if tt.token != "" {
				want = ErrWeakToken
			}
			if !tt.ok && tt.addr != "nonsense" && !errors.Is(err, want) {
				t.Fatalf("error %v does not wrap %v", err, want)
			}
		})
	}
}

// get fetches path from srv with optional headers and returns status and body.
func get(t *testing.T, srv *httptest.Server, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTokenOnEveryRequest(t *testing.T) {
	_, c := nodes(t, 3)
	con, err := New(c, WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tests := []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"no token", "/", nil, http.StatusUnauthorized},
		{"no token fragment", "/locks", nil, http.StatusUnauthorized},
		{"no token json", "/api/locks", nil, http.StatusUnauthorized},
		{"wrong token", "/?token=nope", nil, http.StatusUnauthorized},
		{"query is swapped for a cookie", "/?token=s3cret", nil, http.StatusSeeOther},
		{"bearer", "/locks", map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK},
		{"bearer json", "/api/locks", map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK},
		{"header", "/", map[string]string{"X-Quorumlock-Token": "s3cret"}, http.StatusOK},
		{"wrong bearer beats right query", "/?token=s3cret", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"any host with a token", "/", map[string]string{"Host": "console.example:80", "X-Quorumlock-Token": "s3cret"}, http.StatusOK},
		{"forged cookie", "/", map[string]string{"Cookie": sessionCookie + "=s3cret"}, http.StatusUnauthorized},
		{"healthz needs no token", "/healthz", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := get(t, srv, tt.path, tt.hdr); code != tt.want {
				t.Fatalf("GET %s: %d, want %d (%s)", tt.path, code, tt.want, body)
			}
		})
	}
	// The token in the query is swapped for an HttpOnly, SameSite=Strict
	// cookie and a redirect to the same page without it; the cookie then
	// opens the page, the fragment and the JSON.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/?token=s3cret&name=orders%2F42", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || strings.Contains(loc, "token") || !strings.Contains(loc, "name=orders%2F42") {
		t.Fatalf("exchange: %d, Location %q", resp.StatusCode, loc)
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || strings.Contains(ck.Value, "s3cret") {
		t.Fatalf("session cookie: %+v", ck)
	}
	for _, path := range []string{"/", "/locks", "/api/locks"} {
		code, body := get(t, srv, path, map[string]string{"Cookie": ck.String()})
		if code != http.StatusOK || strings.Contains(body, "s3cret") {
			t.Fatalf("GET %s with the cookie: %d (token in the body: %v)", path, code, strings.Contains(body, "s3cret"))
		}
	}
	// POST without the token is refused before anything else.
	resp, err = srv.Client().PostForm(srv.URL+"/unlock", url.Values{"name": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST without token: %d", resp.StatusCode)
	}
}

func TestNoTokenAnswersLoopbackNamesOnly(t *testing.T) {
	_, c := nodes(t, 3)
	con, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	for host, want := range map[string]int{
		"":                         http.StatusOK, // the server's own 127.0.0.1:port
		"localhost:1234":           http.StatusOK,
		"[::1]:1234":               http.StatusOK,
		"attacker.example:1234":    http.StatusForbidden, // DNS rebinding
		"127.0.0.1.nip.io:1234":    http.StatusForbidden,
		"console.internal.example": http.StatusForbidden,
	} {
		hdr := map[string]string{}
		if host != "" {
			hdr["Host"] = host
		}
		if code, _ := get(t, srv, "/", hdr); code != want {
			t.Errorf("Host %q: %d, want %d", host, code, want)
		}
	}
}

var formKeyRE = regexp.MustCompile(`name="key" value="([0-9a-f]+)"`)

// The page lists a held lock with its holder and verdict; the force-unlock
// form needs the form key, the typed name and who does it; a forced lock
// shows who forced it.
func TestPageAndForceUnlockForm(t *testing.T) {
	_, c := nodes(t, 3, quorum.WithTTL(5*time.Second))
	ctx := t.Context()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(context.Background())
	// A lock outside the console's --match: never shown, never forced.
	pm, _ := c.Mutex("payments/1", quorum.WithOwner("payer"))
	please, err := pm.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer please.Unlock(context.Background())
	con, err := New(c, WithPattern("orders/*"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	code, body := get(t, srv, "/", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /: %d %s", code, body)
	}
	for _, want := range []string{`data-lock="orders/42"`, `data-verdict="held"`, "worker-1", `data-force="orders/42"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("page lacks %q:\n%s", want, body)
		}
	}
	key := formKeyRE.FindStringSubmatch(body)
	if key == nil {
		t.Fatal("no form key in the page")
	}

	post := func(form url.Values, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/unlock", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	refused := []struct {
		name string
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"no form key", url.Values{"name": {"orders/42"}, "confirm": {"orders/42"}, "by": {"x"}}, nil, http.StatusForbidden},
		{"wrong form key", url.Values{"key": {"00"}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {"x"}}, nil, http.StatusForbidden},
		{"not confirmed", url.Values{"key": {key[1]}, "name": {"orders/42"}, "by": {"x"}}, nil, http.StatusBadRequest},
		{"wrong confirmation", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/4"}, "by": {"x"}}, nil, http.StatusBadRequest},
		{"anonymous", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}}, nil, http.StatusBadRequest},
		{"cross origin", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {"x"}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"3 MB by", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {strings.Repeat("x", 3<<20)}}, nil, http.StatusBadRequest},
		{"long by", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {strings.Repeat("x", admin.MaxBy+1)}}, nil, http.StatusBadRequest},
		{"control character in by", url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {"alice\x1b[31m"}}, nil, http.StatusBadRequest},
		{"long name", url.Values{"key": {key[1]}, "name": {"orders/" + strings.Repeat("x", quorum.MaxNameLen)}, "confirm": {"orders/" + strings.Repeat("x", quorum.MaxNameLen)}, "by": {"x"}}, nil, http.StatusBadRequest},
		{"outside --match", url.Values{"key": {key[1]}, "name": {"payments/1"}, "confirm": {"payments/1"}, "by": {"x"}}, nil, http.StatusForbidden},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if resp := post(tt.form, tt.hdr); resp.StatusCode != tt.want {
				t.Fatalf("POST: %d, want %d", resp.StatusCode, tt.want)
			}
			for _, name := range []string{"orders/42", "payments/1"} {
				if ins, _ := c.Admin().Inspect(ctx, name); ins.Verdict != admin.HeldByQuorum || ins.Forced != nil {
					t.Fatalf("refused form changed %s: %q, force record %+v", name, ins.Verdict, ins.Forced)
				}
			}
		})
	}

	// Reads outside --match are refused too, and the list leaves them out.
	for _, path := range []string{"/api/locks?name=payments/1", "/?name=payments/1", "/locks?name=payments%2F1"} {
		if code, body := get(t, srv, path, nil); code != http.StatusNotFound || strings.Contains(body, "payer") || !strings.Contains(body, "outside this console") {
			t.Errorf("GET %s: %d %s, want 404 naming the --match", path, code, body)
		}
	}
	if _, body := get(t, srv, "/api/locks", nil); strings.Contains(body, "payments") {
		t.Errorf("the list shows a lock outside --match:\n%s", body)
	}
	// Only the console writes its messages.
	if _, body := get(t, srv, "/?flash=Lock+released+by+admin", nil); strings.Contains(body, "released by admin") || strings.Contains(body, `id="flash"`) {
		t.Errorf("the page shows a ?flash= text it did not write:\n%s", body)
	}

	// A by that imitates the console's own record stays what was typed.
	resp := post(url.Values{"key": {key[1]}, "name": {"orders/42"}, "confirm": {"orders/42"}, "by": {"alice (console 10.9.9.9:1)"}}, map[string]string{"Origin": srv.URL})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST: %d, want 303", resp.StatusCode)
	}
	ins, _ := c.Admin().Inspect(ctx, "orders/42")
	if ins.Verdict != admin.Free || ins.Forced == nil || ins.Forced.By != "alice (console 10.9.9.9:1)" || !strings.HasPrefix(ins.Forced.Via, "console 127.0.0.1:") {
		t.Fatalf("after the form: %q forced %+v", ins.Verdict, ins.Forced)
	}
	loc := resp.Header.Get("Location")
	code, body = get(t, srv, "/"+strings.TrimLeft(loc, "./"), nil)
	if code != http.StatusOK || !strings.Contains(body, "Force-unlocked &#34;orders/42&#34;") || !strings.Contains(body, "force-unlocked by &#34;alice (console 10.9.9.9:1)&#34;") || !strings.Contains(body, "via console 127.0.0.1:") {
		t.Fatalf("page after the force (%s): %d\n%s", loc, code, body)
	}
}
