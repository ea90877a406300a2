// Package oneline keeps the library's error texts on one line with the
// prefix "quorumlock: " once: Join is errors.Join on one line, Bare an
// error's text ready to be quoted inside another.
package oneline

import (
	"strings"
)

// Prefix starts every error text of the library.
const Prefix = "quorumlock: "

// Bare is err's text on one line without the prefix, to be quoted inside
// another error's text. An error with a Bare() string method gives that.
func Bare(err error) string {
	if b, ok := err.(interface{ Bare() string }); ok {
		return b.Bare()
	}
	s := strings.ReplaceAll(err.Error(), "\n", "; ")
	s = strings.TrimPrefix(s, Prefix)
	return strings.ReplaceAll(s, "; "+Prefix, "; ")
}

// Join is errors.Join whose text is one line: the errors' texts joined
// by "; ", the prefix once. nil errors are skipped; Join of one error is
// that error, of none nil.
func Join(errs ...error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return &joined{errs: out, sep: "; "}
}

// Wrap is outer with inner as its detail, "quorumlock: outer: inner",
// and errors.Is finds both.
func Wrap(outer, inner error) error {
	if inner == nil {
		return outer
	}
	return &joined{errs: []error{outer, inner}, sep: ": "}
}

type joined struct {
	errs []error
	sep  string
}

func (j *joined) Error() string { return Prefix + j.Bare() }

func (j *joined) Bare() string {
	parts := make([]string, len(j.errs))
	for i, e := range j.errs {
		parts[i] = Bare(e)
	}
	return strings.Join(parts, j.sep)
}

func (j *joined) Unwrap() []error { return j.errs }
