package console

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
