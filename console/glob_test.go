package console

import "testing"

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "anything/at/all", true},
		{"orders/*", "orders/42", true},
		{"orders/*", "orders/a/b", true},
		{"orders/*", "payments/1", false},
		{"orders/*", "xorders/1", false},
		{"o?ders", "orders", true},
		{"o?ders", "oders", false},
		{"job[0-9]", "job7", true},
		{"job[0-9]", "jobx", false},
		{"job[^0-9]", "jobx", true},
		{"job[ab]", "jobb", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
	} {
		if got := globMatch(tc.p, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}
