package observe

import (
	"context"
	"fmt"
	"log/slog"
)

// RedisLogger routes go-redis's own log lines to a slog.Logger. go-redis
// logs through one process-global logger, to stderr by default, and when a
// node is down it writes a line per failed dial until as many dials as its
// pool holds failed in a row (a few dozen lines per dead node and outage);
// the lock's errors already say which node failed and why. Set it once, at start, for the whole process (it
// also takes the lines of the program's other go-redis clients):
//
//	redis.SetLogger(observe.RedisLogger{Logger: slog.Default()})                        // at Info, component=go-redis
//	redis.SetLogger(observe.RedisLogger{Logger: slog.Default(), Level: slog.LevelDebug}) // out of sight by default
//	redis.SetLogger(observe.RedisLogger{})                                              // discard
//
// A nil Logger discards every line.
type RedisLogger struct {
	Logger *slog.Logger
	Level  slog.Level // of every line; the zero value is Info
}

// Printf logs one go-redis line (go-redis's logging interface).
func (r RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	if r.Logger == nil || !r.Logger.Enabled(ctx, r.Level) {
		return
	}
	r.Logger.Log(ctx, r.Level, fmt.Sprintf(format, v...), "component", "go-redis")
}
