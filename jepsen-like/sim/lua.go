package sim

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// pooledLua says whether new nodes run EVAL and EVALSHA on the pooled
// runner (the default) or on miniredis's own (SIM_LUA=miniredis).
var pooledLua = os.Getenv("SIM_LUA") != "miniredis"

// luaRunner runs the scripts of one miniredis server on one long-lived
// gopher-lua state, with each script compiled once.
//
// Why: miniredis builds a fresh Lua state for every EVAL and EVALSHA (a new
// interpreter, seven libraries, cjson, the redis module, a script that
// guards the globals) before it runs the script; that was half the
// simulation's CPU. Redis itself keeps one interpreter for the server's
// life, which is what the runner does.
//
// How: the node's hook hands EVAL and EVALSHA to run, which takes the
// server's lock for the whole script (a script is atomic, as in Redis) and
// runs every redis.call through the server's Dispatch on a peer that
// carries a connection context miniredis made for a script's commands (see
// nestedCtx): miniredis then neither takes the lock again nor lets the
// command pass the hook's clock and fault handling. Anything the runner is
// not sure to do as miniredis would (MULTI, EVAL_RO, a bad key count, a
// script the server's cache does not have) goes back to miniredis.
//
// The runner's script cache is a subset of the server's: it learns a script
// when SCRIPT LOAD passes the hook, and an EVAL of a script it does not
// know loads it into the server first. An EVALSHA of an unknown SHA is
// miniredis's to answer (NOSCRIPT after a restart without persistence: the
// new server and its runner start empty).
type luaRunner struct {
	m    *miniredis.Miniredis
	tmpl *nestedCtx

	mu      sync.Mutex
	scripts map[string]*lua.FunctionProto // by SHA1

	// The rest is used only under m's lock.
	l       *lua.LState
	env     *lua.LTable // the scripts' globals: empty, every write refused
	globals *lua.LTable // what env reads through: the libraries, KEYS, ARGV
	ctx     reflect.Value
	peer    *server.Peer // a script's commands' peer, ctx its context
	out     bytes.Buffer
	w       *bufio.Writer
	r       *bufio.Reader
	sha     string // of the script running (a function's name)
	runs    int    // scripts run, for tests
	// around, when set, runs each script (EVAL, EVALSHA, FCALL) of a
	// client: it calls run once, m locked (the node's replication of a
	// script's effects, node.go).
	around func(run func())
	// capturing and fx: while around captures a script's effects, the
	// writes it makes (node.go).
	capturing bool
	fx        [][]string
	libs      map[string]*funcLibrary // Redis Functions (functions.go)
	funcs     map[string]*luaFunction
}

// loaderName is the client name of the peer an EVAL of a script the runner
// does not know uses to SCRIPT LOAD it; the hook lets it through.
const loaderName = "__sim_script_loader__"

// newLuaRunner returns m's runner, or nil (miniredis runs the scripts) when
// SIM_LUA=miniredis or miniredis's connection context could not be
// captured.
func newLuaRunner(m *miniredis.Miniredis, pooled bool) *luaRunner {
	if !pooled {
		return nil
	}
	tmpl, err := captureNested()
	if err != nil {
		return nil
	}
	r := &luaRunner{m: m, tmpl: tmpl, scripts: map[string]*lua.FunctionProto{},
		libs: map[string]*funcLibrary{}, funcs: map[string]*luaFunction{}}
	r.w = bufio.NewWriter(&r.out)
	r.r = bufio.NewReader(&r.out)
	r.ctx = reflect.New(tmpl.typ)
	r.peer = server.NewPeer(r.w)
	r.peer.Ctx = r.ctx.Interface()
	r.open()
	return r
}

// nestedCtx is a connection context miniredis made for the commands of a
// script (its type is unexported): nested set, database 0, not
// authenticated (the simulation sets no password), no transaction, made for
// the script whose SHA1 is sha.
type nestedCtx struct {
	v   reflect.Value // of the struct
	typ reflect.Type
	sha string
	// Field indexes of the connection context, read on clients' peers.
	selectedDB, transaction, subscriber int
}

const captureScript = "return redis.call('PING')"

var captureNested = sync.OnceValues(func() (*nestedCtx, error) {
	// One script through miniredis's own EVAL on a throwaway server; the
	// hook keeps the context its redis.call ran with.
	m := miniredis.NewMiniRedis()
	c, err := m.Dial()
	if err != nil {
		return nil, err
	}
	_ = c.Close()
	defer m.Close()
	var got any
	m.Server().SetPreHook(func(p *server.Peer, cmd string, _ ...string) bool {
		if cmd == "PING" {
			got = p.Ctx
		}
		return false
	})
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	m.Server().Dispatch(server.NewPeer(w), []string{"EVAL", captureScript, "0"})
	_ = w.Flush()
	if got == nil || !nested(&server.Peer{Ctx: got}) {
		return nil, errors.New("sim: no nested connection context captured")
	}
	v := reflect.ValueOf(got).Elem()
	t := v.Type()
	n := &nestedCtx{v: v, typ: t, sha: sha1Hex(captureScript)}
	for name, dst := range map[string]*int{"selectedDB": &n.selectedDB, "transaction": &n.transaction, "subscriber": &n.subscriber} {
		f, ok := t.FieldByName(name)
		if !ok {
			return nil, fmt.Errorf("sim: miniredis's connection context has no field %s", name)
		}
		*dst = f.Index[0]
	}
	if v.Field(n.selectedDB).Int() != 0 || !v.Field(n.transaction).IsNil() || !v.Field(n.subscriber).IsNil() {
		return nil, errors.New("sim: captured connection context is not a plain script's")
	}
	return n, nil
})

// plain reports whether a client's peer is in the state the runner handles:
// database 0, outside MULTI, not subscribed.
func (r *luaRunner) plain(p *server.Peer) bool {
	if p.Ctx == nil {
		return true
	}
	v := reflect.ValueOf(p.Ctx)
	if v.Type() != r.ctx.Type() || v.IsNil() {
		return false
	}
	v = v.Elem()
	return v.Field(r.tmpl.selectedDB).Int() == 0 && v.Field(r.tmpl.transaction).IsNil() && v.Field(r.tmpl.subscriber).IsNil()
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// compiled holds every script compiled in the process by source SHA1: a
// FunctionProto is read-only once compiled, so servers share them.
var compiled sync.Map

func compile(sha, src string) (*lua.FunctionProto, error) {
	if p, ok := compiled.Load(sha); ok {
		return p.(*lua.FunctionProto), nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), "user_script")
	if err != nil {
		return nil, err
	}
	p, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, err
	}
	compiled.Store(sha, p)
	return p, nil
}

// hook sees every command a client sends once the node's own hook let it
// through; true means the runner answered it.
func (r *luaRunner) hook(p *server.Peer, cmd string, args []string) bool {
	switch cmd {
	case "EVAL", "EVALSHA":
	case "SCRIPT":
		r.learn(p, args)
		return false
	case "FUNCTION", "FCALL", "FCALL_RO":
		return r.functionHook(p, cmd, args)
	default:
		return false
	}
	if len(args) < 2 || !r.plain(p) {
		return false
	}
	nkeys, err := strconv.Atoi(args[1])
	if err != nil || nkeys < 0 || nkeys > len(args)-2 {
		return false // miniredis answers the error
	}
	sha := args[0]
	if cmd == "EVAL" {
		sha = sha1Hex(args[0])
	}
	r.mu.Lock()
	proto := r.scripts[sha]
	r.mu.Unlock()
	if proto == nil {
		if cmd == "EVALSHA" || !r.load(args[0], sha) {
			return false
		}
		r.mu.Lock()
		proto = r.scripts[sha]
		r.mu.Unlock()
	}
	r.m.Lock()
	r.script(func() { r.run(p, sha, proto, args[2:2+nkeys], args[2+nkeys:]) })
	r.m.Unlock()
	return true
}

// script runs run through around, if set. Called with m locked.
func (r *luaRunner) script(run func()) {
	if r.around == nil {
		run()
		return
	}
	r.around(run)
}

// learn follows SCRIPT LOAD and SCRIPT FLUSH into the runner's cache
// (miniredis still runs them, for its own cache).
func (r *luaRunner) learn(p *server.Peer, args []string) {
	if len(args) == 0 {
		return
	}
	switch strings.ToUpper(args[0]) {
	case "FLUSH":
		// Even inside MULTI: forgetting too much only sends scripts back
		// to miniredis.
		r.mu.Lock()
		clear(r.scripts)
		r.mu.Unlock()
	case "LOAD":
		if len(args) != 2 || !r.plain(p) {
			return
		}
		sha := sha1Hex(args[1])
		if proto, err := compile(sha, args[1]); err == nil {
			r.mu.Lock()
			r.scripts[sha] = proto
			r.mu.Unlock()
		}
	}
}

// load puts src in the server's script cache (an EVAL caches its script,
// as Redis's does) and then in the runner's; false if either refused it.
func (r *luaRunner) load(src, sha string) bool {
	proto, err := compile(sha, src)
	if err != nil {
		return false // miniredis answers the compile error
	}
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	p := server.NewPeer(w)
	p.ClientName = loaderName
	r.m.Server().Dispatch(p, []string{"SCRIPT", "LOAD", src})
	_ = w.Flush()
	if got, err := server.ParseReply(bufio.NewReader(&out)); err != nil || got != sha {
		return false
	}
	r.mu.Lock()
	r.scripts[sha] = proto
	r.mu.Unlock()
	return true
}

// open builds the interpreter: Redis's libraries base, table, string and
// math, the redis module, and globals scripts can read but not write.
func (r *luaRunner) open() {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	redisMod := l.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"call":         func(l *lua.LState) int { return r.call(l, true) },
		"pcall":        func(l *lua.LState) int { return r.call(l, false) },
		"error_reply":  errorReply,
		"status_reply": statusReply,
		"sha1hex":      sha1hexLua,
		"log":          func(*lua.LState) int { return 0 },
	} {
		redisMod.RawSetString(name, l.NewFunction(fn))
	}
	for i, name := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		redisMod.RawSetString(name, lua.LNumber(i))
	}

	// globals holds what the libraries put in the real global table, less
	// what reads files; env, the scripts' environment, is empty and reads
	// through to it. Every assignment to a global reaches env's
	// __newindex and fails, new name or not, so no script leaves anything
	// for the next one; reading an unknown global fails too, as in Redis.
	r.l = l
	r.globals = l.NewTable()
	l.G.Global.ForEach(func(k, v lua.LValue) { r.globals.RawSet(k, v) })
	for _, name := range []string{"dofile", "loadfile", "_printregs"} {
		r.globals.RawSetString(name, lua.LNil)
	}
	r.globals.RawSetString("redis", redisMod)
	// The libraries are shared by every script too: read-only views.
	for _, name := range []string{"redis", "string", "table", "math"} {
		r.globals.RawSetString(name, readOnlyTable(l, name, r.globals.RawGetString(name).(*lua.LTable)))
	}
	r.env = l.NewTable()
	r.globals.RawSetString("_G", r.env)
	gmeta := l.NewTable()
	gmeta.RawSetString("__index", l.NewFunction(func(l *lua.LState) int {
		l.RaiseError("Script attempted to access nonexistent global variable '%s'", l.ToString(2))
		return 0
	}))
	gmeta.RawSetString("__metatable", lua.LString("protected"))
	l.SetMetatable(r.globals, gmeta)
	emeta := l.NewTable()
	emeta.RawSetString("__index", r.globals)
	emeta.RawSetString("__newindex", l.NewFunction(func(l *lua.LState) int {
		name := l.ToString(2)
		if r.globals.RawGetString(name) != lua.LNil {
			l.RaiseError("Attempt to modify a readonly table: global '%s'", name)
		}
		l.RaiseError("Script attempted to create global variable '%s'", name)
		return 0
	}))
	emeta.RawSetString("__metatable", lua.LString("protected"))
	l.SetMetatable(r.env, emeta)
}

// readOnlyTable is an empty table that reads through to t and refuses writes.
func readOnlyTable(l *lua.LState, name string, t *lua.LTable) *lua.LTable {
	meta := l.NewTable()
	meta.RawSetString("__index", t)
	meta.RawSetString("__newindex", l.NewFunction(func(l *lua.LState) int {
		l.RaiseError("Attempt to modify a readonly table: %s.%s", name, l.ToString(2))
		return 0
	}))
	meta.RawSetString("__metatable", lua.LString("protected"))
	ro := l.NewTable()
	l.SetMetatable(ro, meta)
	return ro
}

// run runs one script for client p and writes its reply. Called with m
// locked.
func (r *luaRunner) run(p *server.Peer, sha string, proto *lua.FunctionProto, keys, argv []string) {
	l := r.l
	r.sha = sha
	r.runs++
	// A fresh context each script: a SELECT inside the last one ends with it.
	r.ctx.Elem().Set(r.tmpl.v)
	r.globals.RawSetString("KEYS", stringTable(l, keys))
	r.globals.RawSetString("ARGV", stringTable(l, argv))
	fn := l.NewFunctionFromProto(proto)
	fn.Env = r.env
	l.Push(fn)
	err := l.PCall(0, 1, nil)
	if err != nil {
		l.SetTop(0)
		p.WriteError(r.scriptError(err))
		return
	}
	ret := l.Get(-1)
	l.SetTop(0)
	writeReply(p, ret)
}

func stringTable(l *lua.LState, ss []string) *lua.LTable {
	t := l.CreateTable(len(ss), 0)
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

// scriptError is the error reply of a script that raised err, in Redis 7's
// words: a command's error (raised by redis.call) keeps its code, any other
// is an ERR; both name the script and the line.
func (r *luaRunner) scriptError(err error) string {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return "ERR " + err.Error()
	}
	if t, ok := ae.Object.(*lua.LTable); ok {
		if msg, ok := t.RawGetString("err").(lua.LString); ok {
			if line := t.RawGetString("line"); line != lua.LNil && !strings.Contains(string(msg), "script: ") {
				return fmt.Sprintf("%s script: %s, on @user_script:%s.", msg, r.sha, line.String())
			}
			return string(msg)
		}
	}
	msg := ae.Object.String()
	if rest, ok := strings.CutPrefix(msg, "user_script:"); ok {
		if line, _, ok := strings.Cut(rest, ":"); ok {
			return fmt.Sprintf("ERR %s script: %s, on @user_script:%s.", msg, r.sha, line)
		}
	}
	return fmt.Sprintf("ERR %s script: %s", msg, r.sha)
}

// call is redis.call (raise: an error reply raises it) and redis.pcall (an
// error reply comes back as {err=...}).
func (r *luaRunner) call(l *lua.LState, raise bool) int {
	n := l.GetTop()
	if n == 0 {
		return r.fail(l, raise, "ERR Please specify at least one argument for this redis lib call")
	}
	args := make([]string, n)
	for i := 1; i <= n; i++ {
		switch a := l.Get(i).(type) {
		case lua.LString:
			args[i-1] = string(a)
		case lua.LNumber:
			args[i-1] = a.String()
		default:
			return r.fail(l, raise, "ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	r.m.Server().Dispatch(r.peer, args)
	_ = r.w.Flush()
	r.r.Reset(&r.out)
	res, err := server.ParseReply(r.r)
	r.out.Reset()
	if err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "ERR unknown command") {
			msg = "ERR Unknown Redis command called from script"
		}
		// miniredis names its capture script in "not allowed from
		// script" errors: name this one.
		msg = strings.ReplaceAll(msg, r.tmpl.sha, r.sha)
		return r.fail(l, raise, msg)
	}
	l.Push(toLua(l, res))
	return 1
}

// fail answers a redis.call or redis.pcall that got an error reply msg:
// pcall returns {err=msg}; call raises it (a table, as Redis 7 does, which
// also carries the caller's line).
func (r *luaRunner) fail(l *lua.LState, raise bool, msg string) int {
	t := l.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(msg))
	if !raise {
		l.Push(t)
		return 1
	}
	if w := l.Where(1); w != "" {
		if _, line, ok := strings.Cut(strings.TrimSuffix(w, ":"), ":"); ok {
			t.RawSetString("line", lua.LString(line))
		}
	}
	l.Error(t, 0)
	return 0
}

// toLua converts a command's reply: integer → number, bulk → string, nil →
// false, array → table, status → {ok=...}.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LFalse
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case server.Simple:
		t := l.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(v))
		return t
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

// writeReply writes a script's result as Redis converts it: number →
// integer (truncated), string → bulk, true → 1, false and nil → nil, a
// table with a string err → error, with a string ok → status, any other
// table → array up to its first nil.
func writeReply(p *server.Peer, v lua.LValue) {
	switch v := v.(type) {
	case lua.LNumber:
		p.WriteInt(int(v))
	case lua.LString:
		p.WriteBulk(string(v))
	case lua.LBool:
		if v {
			p.WriteInt(1)
		} else {
			p.WriteNull()
		}
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			p.WriteError(string(e))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			p.WriteInline(string(s))
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		p.WriteLen(n)
		for i := 1; i <= n; i++ {
			writeReply(p, v.RawGetInt(i))
		}
	default: // nil, and what Redis turns into nil (functions, userdata)
		p.WriteNull()
	}
}

// errorReply is redis.error_reply: {err=msg}, with the ERR code added when
// msg has none (Redis: "-CODE rest" keeps CODE, anything else gets ERR).
func errorReply(l *lua.LState) int {
	s, ok := l.Get(1).(lua.LString)
	if !ok || l.GetTop() != 1 {
		l.RaiseError("wrong number or type of arguments")
		return 0
	}
	msg := strings.TrimPrefix(string(s), "-")
	if !strings.Contains(msg, " ") {
		msg = "ERR " + msg
	}
	t := l.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(strings.TrimRight(msg, "\r\n")))
	l.Push(t)
	return 1
}

// statusReply is redis.status_reply: {ok=msg}.
func statusReply(l *lua.LState) int {
	s, ok := l.Get(1).(lua.LString)
	if !ok || l.GetTop() != 1 {
		l.RaiseError("wrong number or type of arguments")
		return 0
	}
	t := l.CreateTable(0, 1)
	t.RawSetString("ok", s)
	l.Push(t)
	return 1
}

func sha1hexLua(l *lua.LState) int {
	if l.GetTop() != 1 {
		l.RaiseError("wrong number of arguments")
		return 0
	}
	l.Push(lua.LString(sha1Hex(lua.LVAsString(l.Get(1)))))
	return 1
}
