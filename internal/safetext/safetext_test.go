package safetext

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"orders/42", "orders/42"},
		{"host:123", "host:123"},
		{"", `""`},
		{"a b", `"a b"`},
		{"evil\nfake-lock held root:1", `"evil\nfake-lock held root:1"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{`say "hi"`, `"say \"hi\""`},
		{"zoë", `"zo\u00eb"`},
	} {
		got := Quote(tc.in)
		if got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if strings.ContainsAny(got, "\n\r\x1b") {
			t.Errorf("Quote(%q) keeps a control character", tc.in)
		}
	}
	if got := List([]string{"a", "b c"}, ","); got != `a,"b c"` {
		t.Errorf("List = %s", got)
	}
}
