// Package testmode holds switches that the repository's own tests turn on
// for every client they build, so a whole test suite can run in another
// mode (internal: not for users, who choose the mode with options).
package testmode

import "os"

// Functions makes node.New default to Redis Functions (node.WithFunctions)
// instead of EVALSHA. An explicit WithFunctions still wins. Test binaries
// set it with FromEnv; nothing else writes it.
var Functions bool

// FunctionsEnv is the environment variable that FromEnv reads: "1" turns
// Functions on (make test-functions).
const FunctionsEnv = "QUORUMLOCK_TEST_FUNCTIONS"

// FromEnv sets the switches from the environment; call it from a test
// package's init.
func FromEnv() { Functions = os.Getenv(FunctionsEnv) == "1" }
