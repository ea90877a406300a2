package quorum

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseNodes(t *testing.T) {
	cs, err := parseNodes("redis://:secret@127.0.0.1:7001/2, 127.0.0.1:7002 rediss://u:p@localhost:7003")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cs)
	if len(cs) != 3 {
		t.Fatalf("%d clients", len(cs))
	}
	o := cs[0].(*redis.Client).Options()
	if o.Addr != "127.0.0.1:7001" || o.Password != "secret" || o.DB != 2 || !o.ContextTimeoutEnabled || o.MaxRetries != 0 || o.DialerRetries != 1 {
		t.Fatalf("first node options: %+v", o)
	}
	if cs[1].(*redis.Client).Options().Addr != "127.0.0.1:7002" {
		t.Fatal("bare host:port not accepted")
	}
	if o := cs[2].(*redis.Client).Options(); o.TLSConfig == nil || o.Username != "u" {
		t.Fatal("rediss:// did not enable TLS with the user")
	}
	for _, bad := range []string{"", " , ", "http://x:1", "redis://:pw@host:notaport"} {
		cs, err := parseNodes(bad)
		if err == nil {
			closeAll(cs)
			t.Errorf("parseNodes(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("password leaked in %v", err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvNodes, "")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), EnvNodes) {
		t.Fatalf("empty env: %v", err)
	}
	_, clients := cluster(t, 3)
	var urls []string
	for _, c := range clients {
		urls = append(urls, "redis://"+c.(*redis.Client).Options().Addr)
	}
	t.Setenv(EnvNodes, strings.Join(urls, ","))
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Mutex("env")
	l, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(t.Context())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
