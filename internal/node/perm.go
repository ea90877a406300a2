package node

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// PermissionError is a command the Redis user may not run, or a key or
// channel it may not touch (ACL). Command is the refused command in lower
// case ("publish", "multi"), also when a Lua script ran it; it is empty when
// a key or channel pattern was refused. It unwraps to the server's error.
type PermissionError struct {
	Command string
	// Script names the library script that ran the command, "" when the
	// client sent it directly.
	Script string
	Err    error
}

func (e *PermissionError) Error() string {
	var what string
	switch {
	case e.Command != "" && e.Script != "":
		what = fmt.Sprintf("the Redis user may not run %s (called by the %s script); grant it: ACL SETUSER <user> +%s", strings.ToUpper(e.Command), e.Script, e.Command)
	case e.Command != "":
		what = fmt.Sprintf("the Redis user may not run %s; grant it: ACL SETUSER <user> +%s", strings.ToUpper(e.Command), e.Command)
	case e.Script != "":
		what = fmt.Sprintf("the Redis user may not run a command the %s script calls", e.Script)
	default:
		what = "the Redis user may not touch the lock's keys or channels; grant them: ACL SETUSER <user> ~" + DefaultPrefix + "* &" + DefaultPrefix + "* (with your key prefix)"
	}
	switch e.Command {
	case "eval", "evalsha", "script|load":
		what += ", or call the scripts as Redis Functions: quorum.WithFunctions(true)"
	case "function|load":
		what += ", or have an operator load the function library on every node (Client.Admin().LoadFunctions)"
	}
	return what + " (docs/operations.md lists what a lock client needs): " + e.Err.Error()
}

func (e *PermissionError) Unwrap() error { return e.Err }

var (
	// NOPERM this user has no permissions to run the 'multi' command
	nopermCommand = regexp.MustCompile(`run the '([^']+)' command`)
	// ERR The user executing the script can't run this command or
	// subcommand script: <sha>, on @user_script:<line>.
	// In Functions mode: script: <function>, on @user_function:<line of
	// the library>.
	scriptRefused = regexp.MustCompile(`can't run this command or subcommand script: ([0-9a-f]{40}|\w+), on @user_(?:script|function):(\d+)`)
	callOnLine    = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)
)

// scriptNames maps the SHA1 of every script this package runs to its name
// and source, so that an ACL refusal inside a script can name the command
// (the server gives only the script's SHA and the line). Filled by script.
var scriptNames = map[string]struct{ name, src string }{}

// script makes the script called name from src (run by SHA with a fallback
// to the body) and records it in scriptNames: every script is made here, so
// the table cannot miss one.
func script(name, src string) *redis.Script {
	record(name, src)
	s := redis.NewScript(src)
	scriptHashes[s] = s.Hash()
	return s
}

// scriptHashes holds each script's SHA as an interface value, made once by
// script: EVALSHA's argument without an allocation per call. Written only
// while the package's variables are initialised.
var scriptHashes = map[*redis.Script]any{}

// hashArg is s's SHA as a command argument.
func hashArg(s *redis.Script) any {
	if h, ok := scriptHashes[s]; ok {
		return h
	}
	return s.Hash()
}

// record puts a script body run with EVAL (not made by script) in
// scriptNames; it returns src.
func record(name, src string) string {
	sum := sha1.Sum([]byte(src))
	scriptNames[hex.EncodeToString(sum[:])] = struct{ name, src string }{name, src}
	return src
}

// permError turns the server's ACL refusals into a *PermissionError naming
// what was refused; other errors come back as they are.
func permError(err error) error {
	if err == nil {
		return nil
	}
	var pe *PermissionError
	if errors.As(err, &pe) {
		return err
	}
	msg := err.Error()
	if m := scriptRefused.FindStringSubmatch(msg); m != nil {
		e := &PermissionError{Err: err, Script: m[1][:min(8, len(m[1]))]}
		s, ok := scriptNames[m[1]]
		if f, isFunc := library().scripts[m[1]]; isFunc {
			// A function: the line is the library's.
			s, ok = struct{ name, src string }{f, library().code}, true
		}
		if ok {
			e.Script = s.name
			if line, _ := strconv.Atoi(m[2]); line > 0 {
				if lines := strings.Split(s.src, "\n"); line <= len(lines) {
					if c := callOnLine.FindStringSubmatch(lines[line-1]); c != nil {
						e.Command = strings.ToLower(c[1])
					}
				}
			}
		}
		return e
	}
	if !strings.HasPrefix(msg, "NOPERM") {
		return err
	}
	e := &PermissionError{Err: err}
	if m := nopermCommand.FindStringSubmatch(msg); m != nil {
		e.Command = strings.ToLower(m[1])
	}
	return e
}

// Permanent reports whether err is one no retry can fix: an ACL refusal
// (*PermissionError), a wrong or missing password (WRONGPASS, NOAUTH), a
// command the server does not know (a Redis too old for what the client
// was told to use), or keys of one call in different Cluster slots. A caller that waits for a lock stops on it.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var pe *PermissionError
	if errors.As(err, &pe) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	// CROSSSLOT: the keys of one call are in different Cluster slots, as
	// they stay for that name.
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR unknown command", "ERR unknown subcommand", "CROSSSLOT"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// released is a release script's outcome. A script stops at the first
// command the user may not run, and every release script publishes its
// wake-up message last, after the lock is gone: refused PUBLISH means
// released, with waiters left to their fallback timers. It is counted
// (WakeLost), not reported as a failed release.
func (n *Node) released(v int64, err error) (bool, error) {
	var pe *PermissionError
	if errors.As(err, &pe) && pe.Command == "publish" {
		n.wakeLost.Add(1)
		return true, nil
	}
	return v == 1, err
}

// WakeLost returns how many releases on this node had their wake-up
// message refused (the Redis user lacks +publish) since the last call, and
// starts the count again.
func (n *Node) WakeLost() int64 { return n.wakeLost.Swap(0) }
