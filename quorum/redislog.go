package quorum

import (
	"context"
	"fmt"
	"log/slog"
)

// RedisLogger routes go-redis's own log lines to a slog.Logger. go-redis
// logs through one process-global logger, to stderr by default, and while
// nodes are down it writes a line per failed dial and pool event (about 20
// a second with three dead nodes); the lock's errors already say which
// node failed and why. Set it once, at start, for the whole process:
//
//	redis.SetLogger(quorum.RedisLogger{Logger: slog.Default()}) // at Warn, component=go-redis
//	redis.SetLogger(quorum.RedisLogger{})                       // discard
//
// A nil Logger discards every line.
type RedisLogger struct {
	Logger *slog.Logger
}

// Printf logs one go-redis line at Warn (go-redis's interface).
func (r RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	if r.Logger == nil || !r.Logger.Enabled(ctx, slog.LevelWarn) {
		return
	}
	r.Logger.Log(ctx, slog.LevelWarn, fmt.Sprintf(format, v...), "component", "go-redis")
}
