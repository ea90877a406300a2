// Package safetext prints text that others chose (lock names, holders'
// labels, who force-unlocked a lock) so that it cannot pass for the
// printer's own output: on one line, with no control character reaching
// the terminal.
package safetext

import "strconv"

// Quote returns s as it is when every byte is printable ASCII other than
// a space, '"' or '\\', so ordinary names read as before; otherwise (and
// for "") s in Go's double-quoted form, with every control character,
// newline, escape sequence or non-ASCII rune escaped.
func Quote(s string) string {
	if s == "" {
		return `""`
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// List is Quote of each of ss, joined by sep.
func List(ss []string, sep string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += sep
		}
		out += Quote(s)
	}
	return out
}
