package guard

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed redis_set.lua
	redisSetLua    string
	redisSetScript = redis.NewScript(redisSetLua)
)

// Redis guards values kept in Redis: Set writes only with a token at least
// as high as the last one accepted for the key, in one Lua script (the check
// and the write cannot be separated by another writer). It is safe for
// concurrent use.
type Redis struct {
	c redis.Scripter
}

// NewRedis returns a guard over c (a *redis.Client, *redis.ClusterClient or
// anything that runs scripts). This is the resource's Redis, not the lock's
// nodes.
func NewRedis(c redis.Scripter) *Redis { return &Redis{c: c} }

// TokenKey is the key holding the last token accepted for key. It shares
// key's Cluster slot: key's hash tag when it has one, else key itself as the
// tag ("{key}:fence-token" hashes like "key"). A key with a stray "}" and no
// hash tag cannot be matched that way; give such keys a hash tag.
func TokenKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":fence-token"
		}
	}
	if !strings.Contains(key, "}") {
		return "{" + key + "}:fence-token"
	}
	return key + ":fence-token"
}

// Set writes value to key if token is at least the last token accepted for
// key, and records token as the last one. ttl 0 keeps the value without
// expiry (the token record never expires: it must outlive every lease). A
// refused write returns a *StaleError (errors.Is ErrStale) with the last
// token. Tokens are compared as Lua numbers: exact up to 2^53.
func (g *Redis) Set(ctx context.Context, key string, token int64, value any, ttl time.Duration) error {
	if token <= 0 {
		return fmt.Errorf("quorumlock: token %d: a fencing token is positive (is WithFencing on?)", token)
	}
	res, err := redisSetScript.Run(ctx, g.c, []string{key, TokenKey(key)}, token, value, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return fmt.Errorf("quorumlock: %s: %w", key, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("quorumlock: %s: script answered %v", key, res)
	}
	if res[0] == 0 {
		return &StaleError{Key: key, Token: token, Last: res[1]}
	}
	return nil
}

// Last is the last token accepted for key (0 when none).
func (g *Redis) Last(ctx context.Context, key string) (int64, error) {
	c, ok := g.c.(redis.StringCmdable)
	if !ok {
		return 0, fmt.Errorf("quorumlock: %T cannot GET", g.c)
	}
	s, err := c.Get(ctx, TokenKey(key)).Result()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}
