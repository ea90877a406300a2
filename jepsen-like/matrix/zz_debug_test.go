package matrix

import (
	"os"
	"testing"
)

func TestZZDebug(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	c := findCell(t, os.Getenv("ZZMODE"), os.Getenv("ZZ"))
	r, h, err := RunCell(t.Context(), c, Quick, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.Ops {
		if o.Kind == "acquire" || o.Worker == -1 || o.Kind == "signal" {
			t.Logf("%v %q", o, o.Error)
		}
	}
	t.Logf("%+v", r.VerdictNote)
}
