package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// EnvToken is the environment variable the CLI reads the console token from.
const EnvToken = "QUORUMLOCK_CONSOLE_TOKEN"

type config struct {
	token   string
	tls     *tls.Config
	pattern string
	refresh time.Duration
	limit   int
	timeout time.Duration
}

// Option configures a Console.
type Option func(*config)

// WithToken requires token on every request: header "Authorization: Bearer
// <token>" or "X-Quorumlock-Token" (scripts, the JSON endpoint), or the
// console's session cookie. A browser opens the page once with ?token=<token>;
// the console answers with an HttpOnly, SameSite=Strict cookie and a
// redirect to the same page without the token, so the token stays out of
// the page's links, the browser history and access logs from then on.
// Default none, which Serve allows on loopback addresses only.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithTLS serves HTTPS with cfg (which holds the certificate, e.g. from
// tls.LoadX509KeyPair); the session cookie is then Secure. Default none:
// plain HTTP, which a token then crosses in the clear.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithPattern sets which lock names the console answers for, as a glob
// ("orders/*"): the page lists them, and a request for another name (a
// detail, the JSON, a force-unlock) is refused with 404 (403 for a
// force-unlock). Default "*": all.
func WithPattern(p string) Option { return func(c *config) { c.pattern = p } }

// WithRefresh sets how often the page reloads the lock table. Default 1s.
func WithRefresh(d time.Duration) Option { return func(c *config) { c.refresh = d } }

// WithLimit caps the locks shown on one page of the table and of
// /api/locks; a link (the JSON's "next") leads to the next page. The work
// of a page grows with the limit, not with the names on the nodes.
// Default 200.
func WithLimit(n int) Option { return func(c *config) { c.limit = n } }

// WithTimeout bounds each request's work against the nodes. Default 5s.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Console is the console's http.Handler. It is safe for concurrent use.
type Console struct {
	c       *quorum.Client
	cfg     config
	formKey string  // per-process key every force-unlock form carries (CSRF)
	session string  // the session cookie's value: a MAC of the token under a per-process key
	flash   flasher // seals the force-unlock outcomes the page shows (flash.go)
	mux     *http.ServeMux
	seen    heldSince // when this console first saw each holder (held.go)
}

// sessionCookie is the name of the cookie a token is exchanged for.
const sessionCookie = "quorumlock_session"

// New returns the console of client c. The client stays the caller's.
func New(c *quorum.Client, opts ...Option) (*Console, error) {
	if c == nil {
		return nil, errors.New("console: nil quorum client")
	}
	cfg := config{pattern: "*", refresh: time.Second, limit: 200, timeout: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.refresh < 100*time.Millisecond {
		return nil, fmt.Errorf("console: refresh %v is below 100ms; every refresh scans every node", cfg.refresh)
	}
	if cfg.limit < 1 || cfg.timeout <= 0 {
		return nil, fmt.Errorf("console: limit (%d) and timeout (%v) must be positive", cfg.limit, cfg.timeout)
	}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	fkey := make([]byte, 32)
	if _, err := rand.Read(fkey); err != nil {
		return nil, err
	}
	s := &Console{c: c, cfg: cfg, formKey: hex.EncodeToString(key), flash: flasher{key: fkey}}
	if cfg.token != "" {
		mac := hmac.New(sha256.New, fkey)
		mac.Write([]byte("session\x00" + cfg.token))
		s.session = hex.EncodeToString(mac.Sum(nil))
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.HandleFunc("GET /locks", s.fragment)
	s.mux.HandleFunc("GET /api/locks", s.api) // api.go
	s.mux.HandleFunc("POST /unlock", s.unlock)
	return s, nil
}

// Request limits: a force-unlock form's body, and the operator's name
// (admin.MaxBy). A name is at most quorum.MaxNameLen bytes.
const maxForm = 16 << 10

// inScope reports whether the console answers for lock name (WithPattern).
func (s *Console) inScope(name string) bool { return globMatch(s.cfg.pattern, name) }

// scopeErr is the refusal of a name outside the console's pattern.
func (s *Console) scopeErr(name string) string {
	return fmt.Sprintf("quorumlock console: lock %s is outside this console's names (--match %s)", strconv.Quote(name), strconv.Quote(s.cfg.pattern))
}

// ServeHTTP checks the token (or, without one, that the request names a
// loopback host), sets protective headers and serves the page.
func (s *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if r.URL.Path == "/healthz" {
		// No token: a load balancer or an orchestrator asks, and the
		// answer names no node and no lock (api.go).
		s.healthz(w, r)
		return
	}
	if s.cfg.token != "" {
		if r.Method == http.MethodGet && r.URL.Query().Has("token") && s.exchange(w, r) {
			return
		}
		if !s.tokenOK(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="quorumlock console"`)
			http.Error(w, "quorumlock console: token required: open the page once with ?token=<token> (it is swapped for a cookie) or send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
	} else if !loopbackHost(r.Host) {
		// A page served without a token only answers to loopback names,
		// so a web page elsewhere cannot reach it through DNS rebinding.
		http.Error(w, "quorumlock console: this console has no token and answers only to 127.0.0.1, [::1] or localhost", http.StatusForbidden)
		return
	}
	if name := r.URL.Query().Get("name"); name != "" && r.Method == http.MethodGet {
		switch {
		case len(name) > quorum.MaxNameLen:
			http.Error(w, fmt.Sprintf("quorumlock console: a lock name is at most %d bytes", quorum.MaxNameLen), http.StatusBadRequest)
			return
		case !s.inScope(name):
			http.Error(w, s.scopeErr(name), http.StatusNotFound)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Console) tokenOK(r *http.Request) bool {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(v), []byte(s.cfg.token)) == 1
	}
	if v := r.Header.Get("X-Quorumlock-Token"); v != "" {
		return subtle.ConstantTimeCompare([]byte(v), []byte(s.cfg.token)) == 1
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		return subtle.ConstantTimeCompare([]byte(ck.Value), []byte(s.session)) == 1
	}
	return false
}

// exchange swaps a right ?token= for the session cookie and redirects to
// the same URL without the token. It reports whether it answered (false
// for a wrong token, which then meets the 401).
func (s *Console) exchange(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("token")), []byte(s.cfg.token)) != 1 {
		return false
	}
	// A wrong header beats a right query: the caller said who it is.
	if r.Header.Get("Authorization") != "" || r.Header.Get("X-Quorumlock-Token") != "" {
		return false
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.session, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	q.Del("token")
	u := *r.URL
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return true
}

// loopbackHost reports whether a Host header (host or host:port) names the
// loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Console) page(w http.ResponseWriter, r *http.Request) {
	d := s.view(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, renderPage(&d))
}

func (s *Console) fragment(w http.ResponseWriter, r *http.Request) {
	d := s.view(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, renderLive(&d))
}

// unlock is the force-unlock form's target. It needs the form key, the lock
// name typed again (confirm) and who does it; then it forces the lock on
// every node (recorded as "<by> (console <remote addr>)") and sends the
// browser back to the page with the outcome.
func (s *Console) unlock(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "quorumlock console: cross-origin form refused", http.StatusForbidden)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, fmt.Sprintf("quorumlock console: the form is not readable or above %d bytes; nothing was done", maxForm), http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("key")), []byte(s.formKey)) != 1 {
		http.Error(w, "quorumlock console: stale or foreign form; reload the page and try again", http.StatusForbidden)
		return
	}
	name := r.PostForm.Get("name")
	by := strings.TrimSpace(r.PostForm.Get("by"))
	switch {
	case name == "":
		http.Error(w, "quorumlock console: no lock name", http.StatusBadRequest)
		return
	case len(name) > quorum.MaxNameLen:
		http.Error(w, fmt.Sprintf("quorumlock console: a lock name is at most %d bytes; nothing was done", quorum.MaxNameLen), http.StatusBadRequest)
		return
	case !s.inScope(name):
		http.Error(w, s.scopeErr(name)+"; nothing was done", http.StatusForbidden)
		return
	case r.PostForm.Get("confirm") != name:
		http.Error(w, "quorumlock console: not confirmed: type the lock's name to confirm the force-unlock", http.StatusBadRequest)
		return
	case by == "":
		http.Error(w, "quorumlock console: say who you are; it is recorded next to the lock", http.StatusBadRequest)
		return
	}
	if err := admin.CheckBy(by); err != nil {
		http.Error(w, "quorumlock console: who you are: "+strings.TrimPrefix(err.Error(), "quorumlock: ")+"; nothing was done", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	// What the operator typed (by) and what the console knows (where
	// from) are recorded apart.
	n, err := s.c.Admin().ForceUnlockVia(ctx, name, by, "console "+r.RemoteAddr)
	q := url.Values{}
	q.Set("name", name)
	o := outcome{Name: name, Removed: n, Nodes: len(s.c.Admin().Nodes()), At: time.Now()}
	if err != nil {
		o.Err = strings.TrimPrefix(err.Error(), "quorumlock: ")
	}
	q.Set("flash", s.flash.seal(o))
	http.Redirect(w, r, "./?"+q.Encode(), http.StatusSeeOther)
}
