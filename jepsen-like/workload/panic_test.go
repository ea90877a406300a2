package workload

import (
	"errors"
	"testing"
)

func TestPanicSite(t *testing.T) {
	tests := []struct {
		name, stack, site string
		library           bool
	}{
		{"recovered, in the library", `goroutine 7 [running]:
runtime/debug.Stack()
	/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e
github.com/quorumlock/quorumlock/jepsen-like/workload.(*panics).run.func1()
	jepsen-like/workload/workload.go:190 +0x7a
panic({0x9e7a40?, 0xc0000b2010?})
	/usr/lib/go/src/runtime/panic.go:783 +0x132
github.com/quorumlock/quorumlock/quorum.(*Election).Leader(0xc000120000, {0xb1c2a8, 0xc0001a6000})
	quorum/election.go:301 +0x45
github.com/quorumlock/quorumlock/jepsen-like/workload.electionLocker.Leader(...)
	jepsen-like/workload/election.go:98
`, "github.com/quorumlock/quorumlock/quorum.(*Election).Leader", true},
		{"a crash, nil dereference in a library goroutine", `panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x8b6f2a]

goroutine 412 [running]:
github.com/quorumlock/quorumlock/quorum.(*Election).observe(0xc000120000, {0xb1c2a8, 0xc0001a6000}, 0xc0000a4060, 0xc0000a40c0)
	quorum/election.go:401 +0x2a
created by github.com/quorumlock/quorumlock/quorum.(*Election).Observe in goroutine 7
	quorum/election.go:366 +0x1c5

goroutine 1 [chan receive]:
github.com/quorumlock/quorumlock/jepsen-like/workload.Run(...)
`, "github.com/quorumlock/quorumlock/quorum.(*Election).observe", true},
		{"in go-redis, called by the library", `goroutine 9 [running]:
github.com/redis/go-redis/v9.(*baseClient).process(0xc0)
	redis.go:1 +0x1
github.com/quorumlock/quorumlock/internal/node.(*Node).Leader(0xc0)
	internal/node/elect.go:40 +0x1
`, "github.com/redis/go-redis/v9.(*baseClient).process", true},
		{"in the harness", `panic: boom

goroutine 1 [running]:
github.com/quorumlock/quorumlock/jepsen-like/matrix.runCell(0xc0)
	jepsen-like/matrix/run.go:500 +0x1
`, "github.com/quorumlock/quorumlock/jepsen-like/matrix.runCell", false},
		{"no trace", "exit status 1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site, lib := PanicSite(tt.stack)
			if site != tt.site || lib != tt.library {
				t.Errorf("PanicSite = %q, %v; want %q, %v", site, lib, tt.site, tt.library)
			}
		})
	}
	err := error(&PanicError{Worker: 3, Value: "x", Stack: []byte(tests[0].stack)})
	var pe *PanicError
	if !errors.As(err, &pe) || !pe.InLibrary() || err.Error() != "workload: worker 3 panicked: x (in github.com/quorumlock/quorumlock/quorum.(*Election).Leader)" {
		t.Errorf("PanicError = %q, in library %v", err, pe.InLibrary())
	}
}

func TestSplitPanics(t *testing.T) {
	lib := &PanicError{Worker: 1, Value: "nil term", Stack: []byte("goroutine 1 [running]:\ngithub.com/quorumlock/quorumlock/quorum.(*Term).Number(0x0)\n\tquorum/election.go:157\n")}
	harness := &PanicError{Worker: 2, Value: "bug", Stack: []byte("goroutine 2 [running]:\ngithub.com/quorumlock/quorumlock/jepsen-like/workload.at(0x0)\n\tjepsen-like/workload/workload.go:1\n")}
	other := errors.New("history: call already completed")
	ps, rest := SplitPanics(errors.Join(lib, harness, other))
	if len(ps) != 1 || ps[0] != lib || !errors.Is(rest, other) || !errors.Is(rest, harness) {
		t.Errorf("SplitPanics = %v, %v; want the library's panic apart from the rest", ps, rest)
	}
	if ps, rest := SplitPanics(nil); ps != nil || rest != nil {
		t.Errorf("SplitPanics(nil) = %v, %v", ps, rest)
	}
	if ps, rest := SplitPanics(lib); len(ps) != 1 || rest != nil {
		t.Errorf("SplitPanics(one panic) = %v, %v", ps, rest)
	}
}
