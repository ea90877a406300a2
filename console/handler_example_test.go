package console_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
)

// The console is an http.Handler: here served by httptest over three local
// nodes while one lock is held. Without the token the page is refused; with
// it, the lock's row says who holds it.
func ExampleConsole_ServeHTTP() {
	ctx := context.Background()
	servers, err := localredis.StartN(ctx, 3, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer localredis.StopAll(servers)
	clients := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		rc := s.Client()
		defer rc.Close()
		clients[i] = rc
	}
	c, err := quorum.New(clients, quorum.WithPolicy(quorum.All))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)

	con, err := console.New(c, console.WithToken("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(con)
	defer srv.Close()
	get := func(url, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			// What a script sends; a browser opens /?token=… once and gets
			// a session cookie instead.
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := get(srv.URL+"/", "")
	fmt.Println("no token:", code)
	code, page := get(srv.URL+"/", "s3cret")
	fmt.Println("with token:", code, strings.Contains(page, `data-lock="orders/42" data-verdict="held"`), strings.Contains(page, "worker-1"))
	// Output:
	// no token: 401
	// with token: 200 true true
}
