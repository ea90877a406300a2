package node

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Redis Functions mode (WithFunctions): every script of this package is
// registered as one function of one function library, loaded with
// FUNCTION LOAD REPLACE (Redis >= 7.0) and called with FCALL, so a Redis
// user needs neither EVAL nor EVALSHA.
//
// Versioning: the library is named FunctionsLibrary, "quorumlock_" and the
// first 12 hex digits of the SHA1 of every script's name and body, and each
// function is named after the library ("quorumlock_<hash>_acquire"):
// function names are global on a server, so two versions of this package
// (a rolling upgrade) each load and call their own library side by side,
// on the same keys, and a changed script can never be called under an old
// body. An old version's library stays on the node until an operator
// deletes it (DeleteOtherFunctions).
//
// A node that lost the library (restarted without persistence, FUNCTION
// FLUSH) answers "Function not found": the call loads the library and asks
// once more, as EVALSHA falls back on NOSCRIPT. Functions persist in the
// RDB and AOF files and replicate to replicas.

// WithFunctions makes the node call the library's scripts as Redis
// Functions (FCALL) instead of EVALSHA/EVAL; default off. The library is
// loaded on first use (and again after a node lost it), which needs the
// +function|load permission, or an operator loads it once per node
// (LoadFunctions) and the lock user needs only +fcall.
func WithFunctions(on bool) Option {
	return func(n *Node) { n.opt.functions, n.opt.functionsSet = on, true }
}

// Functions reports whether the node calls its scripts with FCALL.
func (n *Node) Functions() bool { return n.t.functions() }

// funcLib is the function library built from every script of the package.
type funcLib struct {
	name string
	code string
	// fn maps a script's SHA1 (redis.Script.Hash) to its function name.
	fn map[string]string
	// head maps a script's SHA1 to its function name as a command
	// argument, boxed once (fcalls.head).
	head map[string]any
	// scripts maps a function name to the script's name, for PermissionError.
	scripts map[string]string
}

// functionFlags are the flags of each script's function. Without flags a
// function may write, and the server refuses it outright while it is out
// of memory (maxmemory reached), where EVAL refuses only the commands that
// grow memory. The scripts that give a lock back or re-arm its TTL
// (release, extend, force) run there with EVAL, so their functions are
// allow-oom: an Unlock under memory pressure still frees the lock instead
// of leaving it until its TTL. Reads are no-writes.
var functionFlags = map[string]string{
	"read-lock": "no-writes", "server-time": "no-writes",
	"release": "allow-oom", "rw-release": "allow-oom", "fair-release": "allow-oom", "fair-leave": "allow-oom",
	"extend": "allow-oom", "rw-extend": "allow-oom", "force-release": "allow-oom", "force-finish": "allow-oom",
	"elect-extend": "allow-oom", "elect-release": "allow-oom",
}

// serverTimeLua reads the server's clock in a script keyed to a slot (see
// readLockLua).
var serverTimeLua = record("server-time", "return redis.call('time')")

// library builds the function library once, after every script of the
// package was made (script and record run at package initialisation).
var library = sync.OnceValue(func() *funcLib {
	type entry struct{ sha, name, src string }
	var es []entry
	for sha, s := range scriptNames {
		es = append(es, entry{sha, s.name, s.src})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	h := sha1.New()
	for _, e := range es {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", e.name, e.src, functionFlags[e.name])
	}
	lib := &funcLib{
		name:    FunctionsLibraryPrefix + hex.EncodeToString(h.Sum(nil))[:12],
		fn:      map[string]string{},
		head:    map[string]any{},
		scripts: map[string]string{},
	}
	var b strings.Builder
	b.WriteString("#!lua name=" + lib.name + "\n")
	for _, e := range es {
		fname := lib.name + "_" + strings.ReplaceAll(e.name, "-", "_")
		lib.fn[e.sha] = fname
		lib.head[e.sha] = fname
		lib.scripts[fname] = e.name
		// The script's body, unchanged, as the body of a function whose
		// parameters are named as a script's globals.
		fmt.Fprintf(&b, "redis.register_function{function_name = '%s', callback = function(KEYS, ARGV)\n%s\nend", fname, strings.TrimRight(e.src, "\n"))
		if f := functionFlags[e.name]; f != "" {
			fmt.Fprintf(&b, ", flags = { '%s' }", f)
		}
		b.WriteString("}\n")
	}
	lib.code = b.String()
	return lib
})

// FunctionsLibraryPrefix starts the name of every version of the function
// library.
const FunctionsLibraryPrefix = "quorumlock_"

// FunctionsLibrary is the name of this version's function library
// ("quorumlock_<hash>").
func FunctionsLibrary() string { return library().name }

// FunctionsCode is the library's source, as FUNCTION LOAD takes it: an
// operator may load it with redis-cli instead of LoadFunctions.
func FunctionsCode() string { return library().code }

// LoadFunctions loads this version's function library on the node (every
// master of a Cluster, every shard of a Ring), replacing a library of the
// same name. It is what a Functions-mode node does by itself when a call
// finds the library missing; an operator runs it once per node when lock
// users may not run FUNCTION LOAD. It does not need WithFunctions.
func (n *Node) LoadFunctions(ctx context.Context) error {
	if err := n.call(ctx, func(ctx context.Context) error { return n.loadFunctions(ctx) }); err != nil {
		return fmt.Errorf("quorumlock: %s: %w", n.name, err)
	}
	return nil
}

func (n *Node) loadFunctions(ctx context.Context) error {
	code := library().code
	load := func(ctx context.Context, c redis.Cmdable) error {
		return c.FunctionLoadReplace(ctx, code).Err()
	}
	var err error
	switch c := n.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return load(ctx, m) })
	case *redis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error { return load(ctx, s) })
	default:
		err = load(ctx, n.client)
	}
	if err != nil {
		return fmt.Errorf("loading the function library %s: %w", library().name, permError(err))
	}
	return nil
}

// DeleteOtherFunctions deletes from the node (every master of a Cluster)
// the function libraries of other versions of this package, those named
// FunctionsLibraryPrefix and something else than FunctionsLibrary; it
// returns their names. Run it after a rolling upgrade, once no client of an
// older version is left.
func (n *Node) DeleteOtherFunctions(ctx context.Context) ([]string, error) {
	var mu sync.Mutex
	var out []string
	del := func(ctx context.Context, c redis.Cmdable) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: FunctionsLibraryPrefix + "*"}).Result()
		if err != nil {
			return err
		}
		for _, l := range libs {
			if l.Name == library().name || !strings.HasPrefix(l.Name, FunctionsLibraryPrefix) {
				continue
			}
			if err := c.FunctionDelete(ctx, l.Name).Err(); err != nil {
				return err
			}
			mu.Lock()
			out = append(out, l.Name)
			mu.Unlock()
		}
		return nil
	}
	err := n.call(ctx, func(ctx context.Context) error {
		switch c := n.client.(type) {
		case *redis.ClusterClient:
			return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
		case *redis.Ring:
			return c.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error { return del(ctx, s) })
		}
		return del(ctx, n.client)
	})
	sort.Strings(out)
	return out, err
}

// functionMissing reports whether err is the server's "Function not found":
// the node does not have the library (a restart without persistence,
// FUNCTION FLUSH, or a first call).
func functionMissing(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Function not found")
}

// fname is the function of script s; it panics for a script that was not
// made by script or record (a bug of this package).
func fname(sha string) string {
	f, ok := library().fn[sha]
	if !ok {
		panic("quorumlock: no function for script " + sha)
	}
	return f
}

// shaOf is the SHA1 of a script body run with EVAL (record).
func shaOf(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}
