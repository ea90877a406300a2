package sim

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
)

// A Functions-mode node (FCALL) runs on a simulated node: the library is
// loaded on first use, its functions grant and release, a restart without
// persistence loses the library (the node reloads it on "Function not
// found") and one with persistence keeps it.
func TestFunctionsMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNet(1)
		nd := NewNode(nw, "n0")
		defer nd.Close()
		if nd.lua == nil {
			t.Skip("SIM_LUA=miniredis: miniredis has no FUNCTION or FCALL")
		}
		cl := redis.NewClient(ClientOptions(nw, "w0", "n0"))
		defer cl.Close()
		n, err := node.New(cl, node.WithFunctions(true))
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		ctx := t.Context()
		lib := node.FunctionsLibrary()

		libs := func() []string {
			t.Helper()
			ls, err := cl.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: node.FunctionsLibraryPrefix + "*"}).Result()
			if err != nil {
				t.Fatalf("FUNCTION LIST: %v", err)
			}
			var out []string
			for _, l := range ls {
				if len(l.Functions) == 0 {
					t.Fatalf("library %s lists no functions", l.Name)
				}
				out = append(out, l.Name)
			}
			return out
		}
		// acquire takes and releases a fenced lock (the fenced path always
		// runs a script: the unfenced one starts with SET NX).
		acquire := func(name string) {
			t.Helper()
			runs := nd.lua.runs
			l := n.Lock(name, "o1", "a1", true)
			granted, _, fence, err := l.Acquire(ctx, time.Second)
			if err != nil || !granted || fence <= 0 {
				t.Fatalf("acquire %s: granted %v fence %d err %v", name, granted, fence, err)
			}
			if other, _, _, err := n.Lock(name, "o2", "a2", true).Acquire(ctx, time.Second); err != nil || other {
				t.Fatalf("second owner of %s: granted %v err %v", name, other, err)
			}
			if ok, err := l.Release(ctx); err != nil || !ok {
				t.Fatalf("release %s: %v %v", name, ok, err)
			}
			if nd.lua.runs-runs < 3 {
				t.Fatalf("%d functions ran for acquire, acquire, release; want ≥ 3", nd.lua.runs-runs)
			}
		}

		if got := libs(); len(got) != 0 {
			t.Fatalf("a new node has libraries %v", got)
		}
		acquire("a")
		if got := libs(); len(got) != 1 || got[0] != lib {
			t.Fatalf("libraries %v, want [%s]", got, lib)
		}
		if err := cl.FCall(ctx, "no_such_function", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR Function not found") {
			t.Fatalf("FCALL of an unknown function: %v", err)
		}
		if err := cl.FunctionLoad(ctx, node.FunctionsCode()).Err(); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("FUNCTION LOAD of a loaded library without REPLACE: %v", err)
		}
		if err := cl.FCallRO(ctx, lib+"_release", []string{"k"}, "x").Err(); err == nil || !strings.Contains(err.Error(), "write flag") {
			t.Fatalf("FCALL_RO of a writing function: %v", err)
		}

		nd.Crash(true)
		nd.Restart()
		pingBoth := func() {
			// The crash broke the pooled connections: go-redis keeps those of
			// pipelines (the fenced acquire's) in a pool of their own.
			_ = cl.Ping(ctx).Err()
			_, _ = cl.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil })
		}
		pingBoth()
		if got := libs(); len(got) != 1 {
			t.Fatalf("after a restart with persistence: libraries %v", got)
		}
		nd.Crash(false)
		nd.Restart()
		pingBoth()
		if got := libs(); len(got) != 0 {
			t.Fatalf("after a restart without persistence: libraries %v", got)
		}
		acquire("b") // "Function not found": the node loads the library again
		if got := libs(); len(got) != 1 {
			t.Fatalf("after the reload: libraries %v", got)
		}
		if err := cl.FunctionDelete(ctx, lib).Err(); err != nil {
			t.Fatal(err)
		}
		if got := libs(); len(got) != 0 {
			t.Fatalf("after FUNCTION DELETE: libraries %v", got)
		}
	})
}
