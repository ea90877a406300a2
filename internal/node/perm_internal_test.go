package node

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Every script the package runs is known to permError, so an ACL refusal
// inside it names the command.
func TestPermErrorKnowsEveryScript(t *testing.T) {
	for _, s := range []*redis.Script{acquireScript, releaseScript, extendScript, fenceScript, forceReleaseScript, forceFinishScript,
		fairTicketScript, fairAcquireScript, fairReleaseScript, fairLeaveScript, rwAcquireScript, rwReleaseScript, rwExtendScript} {
		if _, ok := scriptNames[s.Hash()]; !ok {
			t.Errorf("script %s is not in scriptNames (perm.go): add its source there", s.Hash())
		}
	}
}

func TestPermError(t *testing.T) {
	var pe *PermissionError
	err := permError(errors.New("NOPERM this user has no permissions to run the 'multi' command"))
	if !errors.As(err, &pe) || pe.Command != "multi" || pe.Script != "" {
		t.Fatalf("%#v", err)
	}
	// Find a line of the extend script that calls pexpire.
	sha := extendScript.Hash()
	line := 0
	for i, l := range strings.Split(scriptNames[sha].src, "\n") {
		if callOnLine.MatchString(l) && callOnLine.FindStringSubmatch(l)[1] == "pexpire" {
			line = i + 1
		}
	}
	err = permError(errors.New("ERR The user executing the script can't run this command or subcommand script: " + sha + ", on @user_script:" + strconv.Itoa(line) + "."))
	if !errors.As(err, &pe) || pe.Command != "pexpire" || pe.Script != "extend" {
		t.Fatalf("line %d: %#v", line, err)
	}
	if err := errors.New("WRONGTYPE x"); permError(err) != err {
		t.Fatal("a non-permission error was changed")
	}
}
