package sim

import (
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
)

// Redis Functions on the pooled runner. miniredis has neither FUNCTION nor
// FCALL; the lock's Functions mode (quorum.WithFunctions) needs FUNCTION
// LOAD [REPLACE], FCALL (and FCALL_RO), and an operator's FUNCTION LIST,
// DELETE and FLUSH. A library's code runs once on the server's interpreter
// with a redis module that has register_function; its callbacks stay
// there and FCALL runs them like a script (KEYS and ARGV as arguments).
// The libraries belong to the runner, so they go where its scripts go: kept
// by a restart with persistence, lost by one without (the lock then sees
// "Function not found" and loads the library again).

// funcLibrary is one loaded library.
type funcLibrary struct {
	name  string
	code  string
	funcs []string // function names, in registration order
}

// luaFunction is one registered function.
type luaFunction struct {
	lib     string
	fn      *lua.LFunction
	noWrite bool
}

// functionHook answers FUNCTION and FCALL (true) for client p; called from
// hook for those commands only.
func (r *luaRunner) functionHook(p *server.Peer, cmd string, args []string) bool {
	if !r.plain(p) {
		if cmd == "FCALL" || cmd == "FCALL_RO" {
			// Inside MULTI (the node's transactions read a lock with
			// FCALL beside other commands): EXEC runs it, m locked.
			return r.queue(p, func(p *server.Peer) { r.script(func() { r.fcall(p, cmd == "FCALL_RO", args) }) })
		}
		return false // miniredis says it does not know the command
	}
	r.m.Lock()
	defer r.m.Unlock()
	if cmd == "FCALL" || cmd == "FCALL_RO" {
		r.script(func() { r.fcall(p, cmd == "FCALL_RO", args) })
		return true
	}
	if len(args) == 0 {
		p.WriteError("ERR wrong number of arguments for 'function' command")
		return true
	}
	sub, rest := strings.ToUpper(args[0]), args[1:]
	switch sub {
	case "LOAD":
		replace := len(rest) == 2 && strings.EqualFold(rest[0], "REPLACE")
		if len(rest) != 1 && !replace {
			p.WriteError("ERR wrong number of arguments for 'function|load' command")
			return true
		}
		name, err := r.loadLibrary(rest[len(rest)-1], replace)
		if err != "" {
			p.WriteError(err)
			return true
		}
		p.WriteBulk(name)
	case "DELETE":
		if len(rest) != 1 {
			p.WriteError("ERR wrong number of arguments for 'function|delete' command")
			return true
		}
		lib, ok := r.libs[rest[0]]
		if !ok {
			p.WriteError("ERR Library not found")
			return true
		}
		r.dropLibrary(lib)
		p.WriteOK()
	case "FLUSH":
		clear(r.libs)
		clear(r.funcs)
		p.WriteOK()
	case "LIST":
		r.listLibraries(p, rest)
	default:
		p.WriteError("ERR unknown subcommand '" + args[0] + "'. Try FUNCTION HELP.")
	}
	return true
}

// loadLibrary runs a library's code and keeps its functions; it returns
// the library's name, or an error reply.
func (r *luaRunner) loadLibrary(code string, replace bool) (string, string) {
	header, body, _ := strings.Cut(code, "\n")
	if !strings.HasPrefix(header, "#!") {
		return "", "ERR Missing library metadata"
	}
	fields := strings.Fields(strings.TrimPrefix(header, "#!"))
	if len(fields) == 0 || fields[0] != "lua" {
		return "", "ERR Engine '" + strings.Join(fields[:min(1, len(fields))], "") + "' not found"
	}
	var name string
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "name="); ok {
			name = v
		} else {
			return "", "ERR Invalid metadata value given: " + f
		}
	}
	if name == "" {
		return "", "ERR Library name was not given"
	}
	old, exists := r.libs[name]
	if exists && !replace {
		return "", "ERR Library '" + name + "' already exists"
	}
	proto, err := compile(sha1Hex(body), body)
	if err != nil {
		return "", "ERR Error compiling function: " + err.Error()
	}
	l := r.l
	got := map[string]*luaFunction{}
	var order []string
	register := l.NewFunction(func(l *lua.LState) int {
		var fname string
		var cb *lua.LFunction
		var flags *lua.LTable
		switch l.GetTop() {
		case 1:
			t := l.CheckTable(1)
			fname = lua.LVAsString(t.RawGetString("function_name"))
			cb, _ = t.RawGetString("callback").(*lua.LFunction)
			flags, _ = t.RawGetString("flags").(*lua.LTable)
		case 2:
			fname = lua.LVAsString(l.Get(1))
			cb, _ = l.Get(2).(*lua.LFunction)
		default:
			l.RaiseError("wrong number of arguments to redis.register_function")
		}
		if fname == "" || cb == nil {
			l.RaiseError("redis.register_function needs a function_name and a callback")
		}
		if _, dup := got[fname]; dup {
			l.RaiseError("Function already exists in the library")
		}
		f := &luaFunction{lib: name, fn: cb}
		if flags != nil {
			flags.ForEach(func(_, v lua.LValue) { f.noWrite = f.noWrite || lua.LVAsString(v) == "no-writes" })
		}
		got[fname] = f
		order = append(order, fname)
		return 0
	})
	// The library's environment: the scripts' globals, with a redis module
	// that also registers functions. The callbacks keep it.
	libRedis := l.NewTable()
	libRedis.RawSetString("register_function", register)
	meta := l.NewTable()
	meta.RawSetString("__index", r.globals.RawGetString("redis"))
	l.SetMetatable(libRedis, meta)
	fglobals := l.NewTable()
	fglobals.RawSetString("redis", readOnlyTable(l, "redis", libRedis))
	gmeta := l.NewTable()
	gmeta.RawSetString("__index", r.globals)
	l.SetMetatable(fglobals, gmeta)
	env := l.NewTable()
	emeta := l.NewTable()
	emeta.RawSetString("__index", fglobals)
	emeta.RawSetString("__newindex", l.NewFunction(func(l *lua.LState) int {
		l.RaiseError("Attempt to modify a readonly table: global '%s'", l.ToString(2))
		return 0
	}))
	emeta.RawSetString("__metatable", lua.LString("protected"))
	l.SetMetatable(env, emeta)

	fn := l.NewFunctionFromProto(proto)
	fn.Env = env
	l.Push(fn)
	if err := l.PCall(0, 0, nil); err != nil {
		l.SetTop(0)
		return "", "ERR Error registering functions: " + err.Error()
	}
	l.SetTop(0)
	if len(order) == 0 {
		return "", "ERR No functions registered"
	}
	for _, f := range order {
		if have, ok := r.funcs[f]; ok && have.lib != name {
			return "", "ERR Function " + f + " already exists"
		}
	}
	if exists {
		r.dropLibrary(old)
	}
	for _, f := range order {
		r.funcs[f] = got[f]
	}
	r.libs[name] = &funcLibrary{name: name, code: code, funcs: order}
	return name, ""
}

func (r *luaRunner) dropLibrary(lib *funcLibrary) {
	for _, f := range lib.funcs {
		delete(r.funcs, f)
	}
	delete(r.libs, lib.name)
}

// fcall runs FCALL (FCALL_RO: ro) function numkeys key... arg... .
func (r *luaRunner) fcall(p *server.Peer, ro bool, args []string) {
	if len(args) < 2 {
		p.WriteError("ERR wrong number of arguments for 'fcall' command")
		return
	}
	nkeys, err := strconv.Atoi(args[1])
	if err != nil || nkeys < 0 {
		p.WriteError("ERR Bad number of keys provided")
		return
	}
	if nkeys > len(args)-2 {
		p.WriteError("ERR Number of keys can't be greater than number of args")
		return
	}
	f, ok := r.funcs[args[0]]
	if !ok {
		p.WriteError("ERR Function not found")
		return
	}
	if ro && !f.noWrite {
		p.WriteError("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	l := r.l
	r.sha = args[0]
	r.runs++
	r.ctx.Elem().Set(r.tmpl.v)
	l.Push(f.fn)
	l.Push(stringTable(l, args[2:2+nkeys]))
	l.Push(stringTable(l, args[2+nkeys:]))
	if err := l.PCall(2, 1, nil); err != nil {
		l.SetTop(0)
		p.WriteError(r.scriptError(err))
		return
	}
	ret := l.Get(-1)
	l.SetTop(0)
	writeReply(p, ret)
}

// listLibraries answers FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (r *luaRunner) listLibraries(p *server.Peer, args []string) {
	pattern, withCode := "*", false
	for i := 0; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "WITHCODE":
			withCode = true
		case "LIBRARYNAME":
			if i+1 >= len(args) {
				p.WriteError("ERR library name argument was not given")
				return
			}
			pattern = args[i+1]
			i++
		default:
			p.WriteError("ERR Unknown argument " + args[i])
			return
		}
	}
	var libs []*funcLibrary
	for _, l := range r.libs {
		if ok, _ := path.Match(pattern, l.name); ok {
			libs = append(libs, l)
		}
	}
	slices.SortFunc(libs, func(a, b *funcLibrary) int { return strings.Compare(a.name, b.name) })
	p.WriteLen(len(libs))
	for _, l := range libs {
		if withCode {
			p.WriteMapLen(4)
		} else {
			p.WriteMapLen(3)
		}
		p.WriteBulk("library_name")
		p.WriteBulk(l.name)
		p.WriteBulk("engine")
		p.WriteBulk("LUA")
		p.WriteBulk("functions")
		p.WriteLen(len(l.funcs))
		for _, fname := range l.funcs {
			p.WriteMapLen(3)
			p.WriteBulk("name")
			p.WriteBulk(fname)
			p.WriteBulk("description")
			p.WriteNull()
			p.WriteBulk("flags")
			if r.funcs[fname].noWrite {
				p.WriteSetLen(1)
				p.WriteBulk("no-writes")
			} else {
				p.WriteSetLen(0)
			}
		}
		if withCode {
			p.WriteBulk("library_code")
			p.WriteBulk(l.code)
		}
	}
}

// queue adds fn to the MULTI transaction of p's connection and answers
// QUEUED, as miniredis does for its own commands: EXEC runs the queue in
// order with the server locked. miniredis keeps the queue in an unexported
// field of its connection context (a slice of an unexported func type),
// appended here by reflection. false (miniredis answers) when p is not in
// a transaction on database 0.
func (r *luaRunner) queue(p *server.Peer, fn func(*server.Peer)) bool {
	if p.Ctx == nil {
		return false
	}
	v := reflect.ValueOf(p.Ctx)
	if v.Type() != r.ctx.Type() || v.IsNil() {
		return false
	}
	v = v.Elem()
	tx := v.Field(r.tmpl.transaction)
	if tx.IsNil() || v.Field(r.tmpl.selectedDB).Int() != 0 || !v.Field(r.tmpl.subscriber).IsNil() {
		return false
	}
	tx = reflect.NewAt(tx.Type(), unsafe.Pointer(tx.UnsafeAddr())).Elem()
	cb := reflect.MakeFunc(tx.Type().Elem(), func(args []reflect.Value) []reflect.Value {
		fn(args[0].Interface().(*server.Peer))
		return nil
	})
	tx.Set(reflect.Append(tx, cb))
	p.WriteInline("QUEUED")
	return true
}
