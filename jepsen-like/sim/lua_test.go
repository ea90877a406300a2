package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/node"
)

// luaPair is two nodes on one network, one running scripts on the pooled
// runner, one on miniredis's, with a client each.
type luaPair struct {
	pooled, mini   *Node
	pooledC, miniC *redis.Client
}

func newLuaPair(t *testing.T) *luaPair {
	t.Helper()
	nw := NewNet(1)
	// The two runners are compared call by call, TIME included: their
	// links must take the same time.
	nw.SetBaseDelay(0, 0)
	p := &luaPair{pooled: newSimNode(nw, "pooled", true), mini: newSimNode(nw, "mini", false)}
	if p.pooled.lua == nil {
		t.Fatal("the pooled node has no Lua runner: capturing miniredis's script context failed")
	}
	if p.mini.lua != nil {
		t.Fatal("the miniredis node has a pooled Lua runner")
	}
	p.pooledC = redis.NewClient(ClientOptions(nw, "test", "pooled"))
	p.miniC = redis.NewClient(ClientOptions(nw, "test", "mini"))
	t.Cleanup(func() {
		_ = p.pooledC.Close()
		_ = p.miniC.Close()
		p.pooled.Close()
		p.mini.Close()
	})
	return p
}

// runs is how many scripts the pooled node's current runner ran.
func (p *luaPair) runs() int {
	p.pooled.mu.Lock()
	m, r := p.pooled.m, p.pooled.lua
	p.pooled.mu.Unlock()
	m.Lock() // the runner counts under its server's lock
	defer m.Unlock()
	return r.runs
}

// dump is a server's data: every key of databases 0 and 1 with its type,
// value and TTL.
func dump(m *miniredis.Miniredis) []string {
	var out []string
	for _, db := range []int{0, 1} {
		d := m.DB(db)
		for _, k := range d.Keys() {
			var v string
			switch d.Type(k) {
			case "string":
				v, _ = d.Get(k)
			case "hash":
				fs, _ := d.HKeys(k)
				slices.Sort(fs)
				for _, f := range fs {
					v += f + "=" + d.HGet(k, f) + " "
				}
			case "zset":
				ms, _ := d.ZMembers(k)
				for _, e := range ms {
					s, _ := d.ZScore(k, e)
					v += fmt.Sprintf("%s:%g ", e, s)
				}
			case "list":
				l, _ := d.List(k)
				v = strings.Join(l, " ")
			case "set":
				ms, _ := d.Members(k)
				v = strings.Join(ms, " ")
			}
			out = append(out, fmt.Sprintf("db%d %s %s [%s] ttl=%v", db, k, d.Type(k), v, d.TTL(k)))
		}
	}
	return out
}

func (p *luaPair) sameData(t *testing.T, after string) {
	t.Helper()
	a, b := dump(p.pooled.Miniredis()), dump(p.mini.Miniredis())
	if !slices.Equal(a, b) {
		t.Errorf("after %s the data differ:\n pooled:   %q\n miniredis: %q", after, a, b)
	}
}

// mirror is a go-redis hook on the pooled node's client that first sends
// every command to the miniredis node, then wants the same script replies
// and the same data on both. It writes down every script call, to run them
// all again outside MULTI (inside it, both nodes leave scripts to
// miniredis).
type mirror struct {
	t    *testing.T
	p    *luaPair
	mu   sync.Mutex
	srcs map[string]string // by SHA1, from EVAL and SCRIPT LOAD
	runs [][]any           // EVAL/EVALSHA arguments as sent
}

// handshake commands go-redis sends on each new connection: not mirrored.
var handshake = map[string]bool{"hello": true, "client": true, "auth": true, "select": true, "ping": true}

func (h *mirror) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *mirror) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.process(ctx, []redis.Cmder{cmd}, func(cmds []redis.Cmder) error {
			// go-redis sets a command's error after its hooks return.
			err := next(ctx, cmds[0])
			if err != nil {
				cmds[0].SetErr(err)
			}
			return err
		})
	}
}

func (h *mirror) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.process(ctx, cmds, func(cmds []redis.Cmder) error { return next(ctx, cmds) })
	}
}

func (h *mirror) process(ctx context.Context, cmds []redis.Cmder, next func([]redis.Cmder) error) error {
	var sent []redis.Cmder
	for _, c := range cmds {
		if !handshake[c.Name()] {
			sent = append(sent, c)
		}
	}
	if len(sent) == 0 {
		return next(cmds)
	}
	pipelined := h.p.miniC.Pipelined
	if n := len(sent); n > 2 && sent[0].Name() == "multi" && sent[n-1].Name() == "exec" {
		// A transaction: its commands' replies come with EXEC.
		sent = sent[1 : n-1]
		pipelined = h.p.miniC.TxPipelined
	}
	wants, _ := pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, c := range sent {
			pipe.Do(ctx, c.Args()...)
		}
		return nil
	})
	err := next(cmds)
	for i, c := range sent {
		h.note(c)
		want := wants[i].(*redis.Cmd)
		switch c.Name() {
		case "eval", "evalsha":
			got := c.(*redis.Cmd)
			if g, w := reply(got.Val(), got.Err()), reply(want.Val(), want.Err()); g != w {
				h.t.Errorf("%s %.60q: pooled %s, miniredis %s", c.Name(), fmt.Sprint(c.Args()[1:]), g, w)
			}
		default:
			if (c.Err() == nil) != (want.Err() == nil) {
				h.t.Errorf("%v: pooled err %v, miniredis err %v", c.Args(), c.Err(), want.Err())
			}
		}
	}
	h.p.sameData(h.t, fmt.Sprint(sent[0].Args()))
	return err
}

func (h *mirror) note(c redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	args := c.Args()
	switch c.Name() {
	case "eval":
		src := fmt.Sprint(args[1])
		h.srcs[sha1Hex(src)] = src
		h.runs = append(h.runs, args)
	case "evalsha":
		h.runs = append(h.runs, args)
	case "script":
		if len(args) == 3 && strings.EqualFold(fmt.Sprint(args[1]), "load") {
			src := fmt.Sprint(args[2])
			h.srcs[sha1Hex(src)] = src
		}
	}
}

// reply is a reply in a comparable form.
func reply(v any, err error) string {
	if err != nil {
		return fmt.Sprintf("error %q", err.Error())
	}
	return fmt.Sprintf("%#v", v)
}

// TestLuaRunnerScripts runs every script of package node (through its API:
// the differential transcript, force-unlock and its finish) with the pooled
// runner and with miniredis's, on identical data: after each command both
// nodes must hold the same keys, values and TTLs, and every script must
// give the same reply. Then it runs each recorded script call again as a
// plain EVAL (scripts sent inside MULTI reach miniredis's runner on both
// nodes) and compares again.
func TestLuaRunnerScripts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newLuaPair(t)
		h := &mirror{t: t, p: p, srcs: map[string]string{}}
		p.pooledC.AddHook(h)
		n := newNode(t, p.pooledC)
		ctx := t.Context()
		transcript(ctx, n)

		// Force-unlock, held and not.
		l := n.Lock("g", "gina", "att-11", true)
		if ok, _, _, err := l.Acquire(ctx, time.Second); !ok || err != nil {
			t.Fatalf("acquire g: %v %v", ok, err)
		}
		if ok, err := n.ForceRelease(ctx, "g", node.Force{By: "op", Hold: time.Second}); !ok || err != nil {
			t.Fatalf("force g: %v %v", ok, err)
		}
		if err := n.FinishForce(ctx, "g"); err != nil {
			t.Fatal(err)
		}
		if ok, err := n.ForceRelease(ctx, "absent", node.Force{By: "op"}); ok || err != nil {
			t.Fatalf("force absent: %v %v", ok, err)
		}
		before := p.runs()

		// Every call again, now outside MULTI: each script of the node
		// package on the pooled runner, from the state the run left.
		h.mu.Lock()
		calls := slices.Clone(h.runs)
		srcs := h.srcs
		h.mu.Unlock()
		shas := map[string]bool{}
		for _, args := range calls {
			src := fmt.Sprint(args[1])
			if args[0] == "evalsha" {
				src = srcs[src]
			}
			shas[sha1Hex(src)] = true
			eval := append([]any{"eval", src}, args[2:]...)
			if err := p.pooledC.Do(ctx, eval...).Err(); err != nil && err != redis.Nil {
				t.Logf("%.40q: %v", src, err)
			}
		}
		// 14 library scripts (perm.go's scriptNames) and Queue's TIME.
		if len(shas) < 15 {
			t.Errorf("ran %d distinct scripts, want all 15 of package node: add the operation that runs the missing one", len(shas))
		}
		if got := p.runs() - before; got < len(calls) {
			t.Errorf("the pooled runner ran %d of %d script calls", got, len(calls))
		}
		t.Logf("%d script calls of %d distinct scripts; the pooled runner ran %d scripts", len(calls), len(shas), p.runs())
	})
}

// TestLuaRunnerEdgeCases compares the two runners on scripts that reach
// the corners of Redis's Lua conventions.
func TestLuaRunnerEdgeCases(t *testing.T) {
	cases := []struct {
		name   string
		script string
		keys   []string
		args   []any
		// errLike: both must fail, with these words in both messages (the
		// runners word script errors differently: see lua.go).
		errLike string
	}{
		{name: "nil reply", script: "return redis.call('GET', KEYS[1])", keys: []string{"missing"}},
		{name: "nothing returned", script: "redis.call('GET', KEYS[1])", keys: []string{"missing"}},
		{name: "status from a command", script: "return redis.call('SET', KEYS[1], ARGV[1])", keys: []string{"s"}, args: []any{"v"}},
		{name: "status_reply", script: "return redis.status_reply('FINE')"},
		{name: "ok table", script: "return {ok='fine'}"},
		{name: "integer", script: "return redis.call('INCR', KEYS[1])", keys: []string{"n"}},
		{name: "number truncated", script: "return 3.99"},
		{name: "negative truncated", script: "return -3.99"},
		{name: "booleans", script: "return {true, false, 1}"},
		{name: "nested array", script: "return {1, 'a', {2, {'b'}}, redis.call('GET', 'missing'), 5}"},
		{name: "array ends at nil", script: "return {1, 2, nil, 4}"},
		{name: "bulk", script: "return redis.call('GET', KEYS[1])", keys: []string{"s"}},
		{name: "hash as array", script: "redis.call('HSET', KEYS[1], 'f', 'v', 'g', 'w'); return redis.call('HGETALL', KEYS[1])", keys: []string{"h"}},
		{name: "nil in lua from nil bulk", script: "return type(redis.call('GET', 'missing'))"},
		{name: "status in lua", script: "local r = redis.call('SET', KEYS[1], 'x'); return {type(r), r.ok}", keys: []string{"s2"}},
		{name: "keys and argv", script: "return {#KEYS, #ARGV, KEYS[2], ARGV[3]}", keys: []string{"a", "b"}, args: []any{"1", "2", "three"}},
		{name: "number argument", script: "redis.call('SET', KEYS[1], 12); redis.call('INCRBY', KEYS[1], 1.0); return redis.call('GET', KEYS[1])", keys: []string{"num"}},
		{name: "ttl", script: "redis.call('SET', KEYS[1], 'v', 'PX', 1500); return redis.call('PTTL', KEYS[1])", keys: []string{"t"}},
		{name: "time", script: "return redis.call('TIME')"},
		{name: "sha1hex", script: "return redis.sha1hex('abc')"},
		{name: "string methods", script: "return ('%d-%s'):format(4, string.upper('x')) .. table.concat({'a','b'}, ',') .. math.floor(2.5)"},
		{name: "error via pcall", script: "return redis.pcall('INCR', KEYS[1])", keys: []string{"s"}},
		{name: "pcall error inspected", script: "local r = redis.pcall('INCR', KEYS[1]); return {type(r), r.err}", keys: []string{"s"}},
		{name: "error_reply with code", script: "return redis.error_reply('MY bad thing')"},
		{name: "error_reply without code", script: "return redis.error_reply('bad')"},
		{name: "err table", script: "return {err='NOPE not today'}"},
		{name: "call error raised", script: "return redis.call('INCR', KEYS[1])", keys: []string{"s"}, errLike: "value is not an integer"},
		{name: "runtime error", script: "local x = nil; return x.y", errLike: "attempt to index"},
		{name: "error()", script: "error('boom')", errLike: "boom"},
		{name: "new global", script: "newglobal = 1; return 1", errLike: "global variable"},
		{name: "unknown global read", script: "return nosuchglobal", errLike: "nosuchglobal"},
		{name: "new global via _G", script: "_G.viaG = 1; return 1", errLike: "global variable"},
		{name: "after the globals", script: "return {type(newglobal), type(viaG)}", errLike: "newglobal"},
		{name: "bad argument type", script: "return redis.call('GET', {})", errLike: "arguments must be strings or integers"},
		{name: "unknown command", script: "return redis.call('NOSUCHCOMMAND')", errLike: "nknown"},
		{name: "unknown command via pcall", script: "return type(redis.pcall('NOSUCHCOMMAND'))"},
		{name: "EVAL from a script", script: "return redis.call('EVAL', 'return 1', 0)", errLike: "not allowed from script"},
		{name: "SELECT inside", script: "redis.call('SELECT', 1); redis.call('SET', KEYS[1], 'in1'); return redis.call('GET', KEYS[1])", keys: []string{"d"}},
		{name: "SELECT ends with the script", script: "return redis.call('GET', KEYS[1])", keys: []string{"d"}},
		{name: "compile error", script: "return (", errLike: "Error compiling script"},
		{name: "numkeys too large", script: "return 1", keys: nil, args: nil},
	}
	synctest.Test(t, func(t *testing.T) {
		p := newLuaPair(t)
		ctx := t.Context()
		for _, c := range cases {
			args := []any{"eval", c.script, len(c.keys)}
			for _, k := range c.keys {
				args = append(args, k)
			}
			args = append(args, c.args...)
			if c.name == "numkeys too large" {
				args[2] = 3
			}
			before := p.runs()
			got := p.pooledC.Do(ctx, args...)
			want := p.miniC.Do(ctx, args...)
			g, w := reply(got.Val(), got.Err()), reply(want.Val(), want.Err())
			switch {
			case c.errLike != "":
				if got.Err() == nil || want.Err() == nil || !strings.Contains(g, c.errLike) || !strings.Contains(w, c.errLike) {
					t.Errorf("%s: want errors with %q, pooled %s, miniredis %s", c.name, c.errLike, g, w)
				}
			case g != w:
				t.Errorf("%s: pooled %s, miniredis %s", c.name, g, w)
			}
			t.Logf("%s: %s", c.name, g)
			// Only what the runner cannot run goes to miniredis.
			ran := p.runs() - before
			if fallback := c.name == "compile error" || c.name == "numkeys too large"; ran != 1 && !fallback {
				t.Errorf("%s: the pooled runner ran %d scripts, want 1", c.name, ran)
			}
			p.sameData(t, c.name)
		}

		// Assigning an existing global: the pooled runner refuses (its
		// interpreter is shared, as Redis's is; Redis 7 makes globals
		// read-only too); miniredis allows it, each script having an
		// interpreter of its own. The next script gets its own KEYS.
		err := p.pooledC.Eval(ctx, "KEYS = {'x'}; return 1", []string{"k"}).Err()
		if err == nil || !strings.Contains(err.Error(), "readonly") {
			t.Errorf("assigning KEYS: %v, want a read-only error", err)
		}
		if v, err := p.pooledC.Eval(ctx, "return KEYS[1]", []string{"mine"}).Text(); v != "mine" || err != nil {
			t.Errorf("KEYS after an assignment: %q %v", v, err)
		}
		// Nor can it change a library for the scripts after it.
		for _, s := range []string{"redis.call = nil; return 1", "string.upper = nil; return 1", "math.extra = 1; return 1"} {
			if err := p.pooledC.Eval(ctx, s, nil).Err(); err == nil || !strings.Contains(err.Error(), "readonly") {
				t.Errorf("%s: %v, want a read-only error", s, err)
			}
		}
		if v, err := p.pooledC.Eval(ctx, "return string.upper(redis.call('PING').ok) .. type(math.extra)", nil).Text(); v != "PONGnil" || err != nil {
			t.Errorf("libraries after the assignments: %q %v", v, err)
		}
	})
}

// TestLuaRunnerCache: EVAL caches its script for EVALSHA, SCRIPT LOAD and
// SCRIPT FLUSH keep the runner's cache in step with the server's, a
// restart without persistence forgets every script (NOSCRIPT) and one with
// persistence keeps them, and a script inside MULTI still runs.
func TestLuaRunnerCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newLuaPair(t)
		ctx := t.Context()
		src := "return redis.call('INCR', KEYS[1])"
		sha := sha1Hex(src)
		evalsha := func(c *redis.Client) string {
			return reply(c.EvalSha(ctx, sha, []string{"c"}).Result())
		}
		both := func(what, want string) {
			t.Helper()
			for _, c := range []struct {
				name string
				c    *redis.Client
			}{{"pooled", p.pooledC}, {"miniredis", p.miniC}} {
				if got := evalsha(c.c); !strings.Contains(got, want) {
					t.Errorf("%s: %s EVALSHA: %s, want %s", what, c.name, got, want)
				}
			}
		}
		both("never loaded", "NOSCRIPT")
		for _, c := range []*redis.Client{p.pooledC, p.miniC} {
			if err := c.Eval(ctx, src, []string{"c"}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		runs := p.runs()
		both("after EVAL", "2")
		if p.runs() != runs+1 {
			t.Errorf("EVALSHA after EVAL: the pooled runner did not run it")
		}
		for _, c := range []*redis.Client{p.pooledC, p.miniC} {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		both("after SCRIPT FLUSH", "NOSCRIPT")
		for _, c := range []*redis.Client{p.pooledC, p.miniC} {
			if got, err := c.ScriptLoad(ctx, src).Result(); got != sha || err != nil {
				t.Fatalf("SCRIPT LOAD: %q %v", got, err)
			}
		}
		runs = p.runs()
		both("after SCRIPT LOAD", "3")
		if p.runs() != runs+1 {
			t.Errorf("EVALSHA after SCRIPT LOAD: the pooled runner did not run it")
		}

		// Inside MULTI: miniredis's runner, on both.
		for _, c := range []*redis.Client{p.pooledC, p.miniC} {
			var r *redis.Cmd
			if _, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				r = pipe.EvalSha(ctx, sha, []string{"c"})
				return nil
			}); err != nil || r.Val() != any(int64(4)) {
				t.Errorf("EVALSHA in MULTI: %v %v", r.Val(), err)
			}
		}
		p.sameData(t, "MULTI")

		// Crash with persistence: data and scripts stay. (The client's
		// first command after a crash finds its connection closed.)
		p.pooled.Crash(true)
		p.pooled.Restart()
		_ = p.pooledC.Ping(ctx)
		if got := evalsha(p.pooledC); got != "5" {
			t.Errorf("after a restart with persistence: %s", got)
		}
		// Without: an empty server that knows no script.
		p.pooled.Crash(false)
		p.pooled.Restart()
		_ = p.pooledC.Ping(ctx)
		if got := evalsha(p.pooledC); !strings.Contains(got, "NOSCRIPT") {
			t.Errorf("after a restart without persistence: %s, want NOSCRIPT", got)
		}
		if got := reply(p.pooledC.Eval(ctx, src, []string{"c"}).Result()); got != "1" {
			t.Errorf("EVAL after the restart: %s", got)
		}
		if got := evalsha(p.pooledC); got != "2" {
			t.Errorf("EVALSHA after EVAL after the restart: %s", got)
		}
		if p.runs() != 2 {
			t.Errorf("the new server's runner ran %d scripts, want 2", p.runs())
		}
	})
}

// BenchmarkScript is one acquire and one release on a simulated node, with
// each Lua runner (compare the two ns/op: the machine's speed cancels).
func BenchmarkScript(b *testing.B) {
	for _, pooled := range []bool{true, false} {
		name := "miniredis"
		if pooled {
			name = "pooled"
		}
		b.Run(name, func(b *testing.B) {
			nw := NewNet(1)
			nd := newSimNode(nw, "n0", pooled)
			defer nd.Close()
			c := redis.NewClient(ClientOptions(nw, "bench", "n0"))
			defer c.Close()
			n, err := node.New(c)
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			ctx := b.Context()
			l := n.Lock("bench", "owner", "att", true)
			for b.Loop() {
				if ok, _, _, err := l.Acquire(ctx, time.Minute); !ok || err != nil {
					b.Fatalf("acquire: %v %v", ok, err)
				}
				if ok, err := l.Release(ctx); !ok || err != nil {
					b.Fatalf("release: %v %v", ok, err)
				}
			}
		})
	}
}
