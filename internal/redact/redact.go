// Package redact keeps passwords out of what the library and its tools
// print: it hides the credentials of a node address in every form a user
// types one (redis://user:pw@host, redis://:pw@host, rediss://pw@host, and
// without a scheme :pw@host:port or user:pw@host:port), and lists the
// secrets of a node list so an output can be scrubbed of them as a last
// line of defence.
package redact

import (
	"bytes"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "***"

// Fields splits a node list as quorum.Dial does: commas or white space.
func Fields(spec string) []string {
	return strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
}

// userinfo returns where the credentials of node address s start and end
// (s[start:end], end at the last '@'), or ok false when s has none.
func userinfo(s string) (start, end int, ok bool) {
	end = strings.LastIndexByte(s, '@')
	if end < 0 {
		return 0, 0, false
	}
	if i := strings.Index(s, "://"); i >= 0 && i < end {
		start = i + 3
	}
	return start, end, true
}

// Node hides the credentials (user and password) of one node address:
// redis://:pw@h:1 becomes redis://***@h:1, user:pw@h:1 becomes ***@h:1. An
// address without '@' is returned as it is.
func Node(s string) string {
	start, end, ok := userinfo(s)
	if !ok {
		return s
	}
	return s[:start] + Mask + s[end:]
}

// List is Node for every address of a node list, joined by commas.
func List(spec string) string {
	f := Fields(spec)
	for i := range f {
		f[i] = Node(f[i])
	}
	return strings.Join(f, ",")
}

// Secrets returns the passwords of a node list (and their URL-decoded
// form), for Writer. A user without a password ("user@h") counts as a
// password: go-redis reads redis://pw@h as one in some versions, and a
// user name is no loss to hide.
func Secrets(spec string) []string {
	var out []string
	for _, f := range Fields(spec) {
		start, end, ok := userinfo(f)
		if !ok {
			continue
		}
		info := f[start:end]
		// A URL's password starts after the first ':'; in a malformed
		// address ("redis:/:pw@h") the userinfo may start earlier than
		// the user meant, so the text after the last ':' counts too.
		cands := []string{info}
		if i := strings.IndexByte(info, ':'); i >= 0 {
			cands = []string{info[i+1:], info[strings.LastIndexByte(info, ':')+1:]}
		}
		for _, pw := range cands {
			if pw == "" || slices.Contains(out, pw) {
				continue
			}
			out = append(out, pw)
			if d, err := url.PathUnescape(pw); err == nil && d != pw && d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

// MinScrub is the shortest secret Writer replaces: a shorter one would
// mangle ordinary words, and is no password worth the name.
const MinScrub = 4

// Writer writes to W with every secret replaced by Mask: the last line of
// defence behind the redaction each message does itself. A secret split
// across two writes is not found; fmt's functions write a message at once.
type Writer struct {
	W       io.Writer
	mu      sync.Mutex
	secrets [][]byte
}

// Add makes w replace the secrets given (shorter than MinScrub: ignored).
func (w *Writer) Add(secrets ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= MinScrub {
			w.secrets = append(w.secrets, []byte(s))
		}
	}
}

// Write writes p, scrubbed. It reports len(p) written when the scrubbed
// text was written in full.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	out := p
	for _, s := range w.secrets {
		if bytes.Contains(out, s) {
			out = bytes.ReplaceAll(out, s, []byte(Mask))
		}
	}
	w.mu.Unlock()
	if _, err := w.W.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Text replaces in s every secret of the node list spec, however short:
// for a message about spec that quotes a part of it (a parser's error that
// repeats a path or a host, where Node's rule does not reach).
func Text(s, spec string) string {
	for _, sec := range Secrets(spec) {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}
