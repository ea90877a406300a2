package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/internal/testutil"
)

func TestConsoleCommand(t *testing.T) {
	spec, _ := opsNodes(t, 3)
	t.Setenv(console.EnvToken, "")

	// Beyond loopback without a token: refused before anything is dialled.
	code, _, stderr := cli("console", "--nodes", spec, "--listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(stderr, "without a token") || doubledPrefix(stderr) {
		t.Fatalf("console on 0.0.0.0 without a token: exit %d %s", code, stderr)
	}

	// With a token from the environment: served, and the token is required.
	t.Setenv(console.EnvToken, "t0ken")
	ctx, cancel := context.WithCancel(t.Context())
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- commands["console"].run(ctx, []string{"--nodes", spec, "--listen", "127.0.0.1:0"}, &out)
	}()
	re := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("console did not start: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond) // poll: the console prints its address once it listens
	}
	// A browser: it keeps the cookie the token is swapped for.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	status := func(url string) int {
		resp, err := browser.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("http://" + addr + "/"); got != http.StatusUnauthorized {
		t.Errorf("without token: %d", got)
	}
	if got := status("http://" + addr + "/?token=t0ken"); got != http.StatusOK {
		t.Errorf("with token: %d", got)
	}
	if got := status("http://" + addr + "/api/locks"); got != http.StatusOK {
		t.Errorf("JSON with the cookie: %d", got)
	}
	browser.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("console ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("console did not stop when its context ended")
	}
}
