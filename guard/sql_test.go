package guard

import (
	"testing"
)

func TestUpdateSQL(t *testing.T) {
	cases := []struct {
		name  string
		table Table
		cols  []string
		want  string
		bad   bool
	}{
		{"postgres", Table{Name: "accounts"}, []string{"balance", "note"},
			"UPDATE accounts SET balance = $1, note = $2, fence_token = $3 WHERE id = $4 AND fence_token <= $5", false},
		{"mysql strict", Table{Name: "app.jobs", Key: "job_id", Token: "tok", Placeholder: Question, Strict: true}, []string{"state"},
			"UPDATE app.jobs SET state = ?, tok = ? WHERE job_id = ? AND tok < ?", false},
		{"injection in a name", Table{Name: "a; DROP TABLE b"}, []string{"x"}, "", true},
		{"injection in a column", Table{Name: "a"}, []string{"x = 1 --"}, "", true},
		{"setting the token", Table{Name: "a"}, []string{"fence_token"}, "", true},
		{"nothing to set", Table{Name: "a"}, nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.table.UpdateSQL(tc.cols)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}
