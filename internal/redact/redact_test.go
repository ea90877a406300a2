package redact

import (
	"bytes"
	"strings"
	"testing"
)

func TestNode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:s3cret@h:1", "redis://***@h:1"},
		{"redis://user:s3cret@h", "redis://***@h"},
		{"rediss://s3cret@h:1/0", "rediss://***@h:1/0"},
		{":s3cret@h:1", "***@h:1"},
		{"user:s3cret@h:1", "***@h:1"},
		{"user:p@ss@h:bad", "***@h:bad"},
		{"redis://h:1", "redis://h:1"},
		{"h:1", "h:1"},
	} {
		if got := Node(tc.in); got != tc.want {
			t.Errorf("Node(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	got := Secrets("redis://:one1@h:1, user:two2@h:2\tthree3@h:3,h:4,redis://u:f%40ur@h,redis:/:six6@h")
	want := []string{"one1", "two2", "three3", "f%40ur", "f@ur", "/:six6", "six6"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
	if l := List("redis://:one1@h:1 user:two2@h:2"); strings.Contains(l, "one1") || strings.Contains(l, "two2") {
		t.Errorf("List kept a password: %q", l)
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := &Writer{W: &b}
	w.Add("hunter22", "ab")
	n, err := w.Write([]byte("pw hunter22 and ab\n"))
	if err != nil || n != len("pw hunter22 and ab\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != "pw *** and ab\n" {
		t.Errorf("wrote %q", got)
	}
}
