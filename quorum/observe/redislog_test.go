package observe_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

// RedisLogger forwards go-redis's lines to slog at its Level, or drops them.
func TestRedisLogger(t *testing.T) {
	var buf bytes.Buffer
	l := observe.RedisLogger{Logger: slog.New(slog.NewTextHandler(&buf, nil)), Level: slog.LevelWarn}
	l.Printf(context.Background(), "redis: dial %s: %v", "127.0.0.1:1", "connection refused")
	got := buf.String()
	for _, want := range []string{"level=WARN", `msg="redis: dial 127.0.0.1:1: connection refused"`, "component=go-redis"} {
		if !strings.Contains(got, want) {
			t.Errorf("logged %q, want %q in it", got, want)
		}
	}
	buf.Reset()
	quiet := observe.RedisLogger{Logger: slog.New(slog.NewTextHandler(&buf, nil)), Level: slog.LevelDebug} // below the handler's Info
	quiet.Printf(context.Background(), "redis: %s", "pool event")
	observe.RedisLogger{}.Printf(context.Background(), "redis: %s", "pool event") // nil Logger: dropped
	if buf.Len() != 0 {
		t.Errorf("a line below the handler's level, or without a logger, was logged: %q", buf.String())
	}
}

// go-redis logs through one process-global logger, to stderr: route it
// to slog (or discard it with observe.RedisLogger{}) once, at start. Where
// a missing quorum at start is a configuration error, WithDialCheck makes
// Dial fail instead of returning a client.
func ExampleRedisLogger() {
	redis.SetLogger(observe.RedisLogger{Logger: slog.Default()})

	client, err := quorum.Dial("redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379",
		quorum.WithDialCheck(2*time.Second))
	if err != nil {
		slog.Error("lock nodes unreachable", "err", err) // one line; %+v lists every node
		return
	}
	defer client.Close()
}
