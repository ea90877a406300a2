package admin

import "github.com/quorumlock/quorumlock/internal/testmode"

// QUORUMLOCK_TEST_FUNCTIONS=1 (make test-functions) runs every test of the
// package in Functions mode: node.New reads the switch.
func init() { testmode.FromEnv() }
