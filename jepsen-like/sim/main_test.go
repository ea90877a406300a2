package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// Every run's goroutines live in its synctest bubble, which fails the test
// if one is left; goleak covers the rest (the differential test's real
// clients and server).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
