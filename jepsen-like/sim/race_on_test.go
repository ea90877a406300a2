//go:build race

package sim

// raceBuild: the race detector instruments every memory access and changes
// which goroutine runs when, so replays differ far more often under it.
const raceBuild = true
