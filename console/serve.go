package console

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// ErrNeedToken is returned by CheckListen and Serve for an address other
// than loopback when no token is set.
var ErrNeedToken = errors.New("console: refusing to listen beyond loopback without a token; set one (--token or $" + EnvToken + ") or listen on 127.0.0.1")

// MinToken is the shortest token (in bytes, white space not counted) that
// lets the console listen beyond loopback: anyone who reaches the address
// may guess.
const MinToken = 16

// CheckListen reports whether the console may listen on addr: loopback
// addresses (127.0.0.0/8, ::1, localhost) always, any other address
// (including ":8080" and "0.0.0.0:8080", which mean every interface) only
// with a token of at least MinToken characters other than white space.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: listen address %q: %w (expected host:port, e.g. 127.0.0.1:8080)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if token == "" {
		return fmt.Errorf("%w (address %q)", ErrNeedToken, addr)
	}
	if n := len(strings.Join(strings.Fields(token), "")); n < MinToken {
		return fmt.Errorf("%w: the token has %d characters other than white space, fewer than %d; make one with e.g. openssl rand -hex 16 (address %q)", ErrWeakToken, n, MinToken, addr)
	}
	return nil
}

// ErrWeakToken is returned by CheckListen and Listen for an address other
// than loopback with a token shorter than MinToken.
var ErrWeakToken = errors.New("console: refusing to listen beyond loopback with a weak token")

// Listen checks addr with CheckListen against the console's token and
// listens on it.
func (s *Console) Listen(addr string) (net.Listener, error) {
	if err := CheckListen(addr, s.cfg.token); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// Serve serves the console on ln until ctx ends, then shuts down, giving
// requests under way a few seconds to finish. With WithTLS it serves HTTPS.
func (s *Console) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.tls != nil {
		ln = tls.NewListener(ln, s.cfg.tls)
	}
	srv := &http.Server{
		Handler:           s,
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.timeout + 10*time.Second,
		IdleTimeout:       time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
