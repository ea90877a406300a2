package workload

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PanicError is a panic in one of Run's workers: in the lock under test,
// called by the worker, or in the workload itself. Run returns every one
// (errors.As finds the first); the worker stops, the others go on.
type PanicError struct {
	Worker int
	// Value is what was passed to panic; Stack the panicking goroutine's
	// stack.
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	s := fmt.Sprintf("workload: worker %d panicked: %v", e.Worker, e.Value)
	if site, _ := PanicSite(string(e.Stack)); site != "" {
		s += " (in " + site + ")"
	}
	return s
}

// InLibrary reports whether the panic came from the library under test
// (see PanicSite), not from the harness.
func (e *PanicError) InLibrary() bool {
	_, lib := PanicSite(string(e.Stack))
	return lib
}

// SplitPanics separates, in an error Run returned, the panics of the
// library under test (PanicError.InLibrary, by worker) from the rest: a cell whose
// library panicked is a failed cell, while any other error (a panic of
// the harness included) leaves it unjudged.
func SplitPanics(err error) (library []*PanicError, rest error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var others []error
	for _, e := range errs {
		if pe, ok := e.(*PanicError); ok && pe.InLibrary() {
			library = append(library, pe)
			continue
		}
		others = append(others, e)
	}
	slices.SortStableFunc(library, func(a, b *PanicError) int { return cmp.Compare(a.Worker, b.Worker) })
	return library, errors.Join(others...)
}

// module is the import path of the repository's packages.
const module = "github.com/quorumlock/quorumlock/"

// libraryPackages are the repository's packages under test (the library),
// below module; the rest (jepsen-like, chaos, the CLI) is the harness.
var libraryPackages = []string{"quorum", "internal", "node", "multilock", "drift", "guard", "localredis"}

// PanicSite reads the stack trace of a panicking goroutine, as
// runtime/debug.Stack gives it in a recover or as a crash prints it
// (from its "goroutine N [running]:" line): site is the function that
// panicked; library reports whether the first of the repository's
// functions from there down the stack is the library's, not the
// harness's (a panic in go-redis counts for the library function that
// called it).
func PanicSite(stack string) (site string, library bool) {
	lines := strings.Split(stack, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 1 // the frames below the runtime's panic call
			break
		}
		if start < 0 && strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, "[running]:") {
			start = i + 1
		}
	}
	if start < 0 {
		return "", false
	}
	for _, l := range lines[start:] {
		if l == "" {
			break // the end of the goroutine's frames
		}
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "panic(") {
			continue
		}
		fn := l
		if k := strings.LastIndex(fn, "("); k > 0 {
			fn = fn[:k]
		}
		if site == "" {
			site = fn
		}
		if rest, ok := strings.CutPrefix(fn, module); ok {
			for _, p := range libraryPackages {
				if r, ok := strings.CutPrefix(rest, p); ok && (strings.HasPrefix(r, ".") || strings.HasPrefix(r, "/")) {
					return site, true
				}
			}
			return site, false
		}
	}
	return site, false
}
