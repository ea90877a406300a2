package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"a_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"pass","Package":"p","Test":"TestB/sub"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:9: redis-server not found\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"fail","Package":"p","Elapsed":1.5}`,
	}, "\n")
	var out bytes.Buffer
	code := run(strings.NewReader(in), &out)
	s := out.String()
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"FAIL p 1.5s", "boom", "tests: 1 passed, 1 failed, 1 skipped", "Redis-backed tests were skipped"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if code := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestB"}`+"\n"+`{"Action":"pass","Package":"p"}`), &out); code != 0 {
		t.Fatalf("clean run exit %d:\n%s", code, out.String())
	}
}
