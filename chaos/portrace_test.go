package chaos

import (
	"errors"
	"strings"
	"testing"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// A container start that lost its published port is tried again, at most
// three times; any other failure is returned at once.
func TestRetryPortRace(t *testing.T) {
	race := errors.New("Error starting userland proxy: listen tcp4 127.0.0.1:32812: bind: address already in use")
	other := errors.New("no such image")
	tests := []struct {
		name  string
		errs  []error
		calls int
		want  error
	}{
		{"first try", []error{nil}, 1, nil},
		{"lost the port once", []error{race, nil}, 2, nil},
		{"lost it three times", []error{race, race, race, nil}, 3, race},
		{"another error", []error{other, nil}, 1, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryPortRace(func() error {
				calls++
				return tt.errs[calls-1]
			})
			if calls != tt.calls || !errors.Is(err, tt.want) && err != tt.want {
				t.Fatalf("%d calls, %v; want %d, %v", calls, err, tt.calls, tt.want)
			}
		})
	}
}

// Through the HTTP API (the Docker backend's toxiproxy container), adding
// a toxic that is still there from a heal that failed replaces it instead
// of failing the step.
func TestAddToxicReplacesALeftover(t *testing.T) {
	tp, err := StartToxiproxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	if _, err := tp.NewProxy("m0", "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	api, err := toxiclient.NewClient(strings.TrimPrefix(tp.URL(), "http://")).Proxy("m0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{name: "m0", api: api}
	tox := timeoutToxic("chaos_partition_upstream", "upstream")
	for i := range 2 {
		if err := p.AddToxic(t.Context(), tox); err != nil {
			t.Fatalf("add %d: %v", i+1, err)
		}
	}
	toxics, err := api.Toxics()
	if err != nil || len(toxics) != 1 {
		t.Fatalf("toxics %+v (%v), want the one", toxics, err)
	}
}
