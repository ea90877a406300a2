package chaos

import (
	"errors"
	"testing"
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
