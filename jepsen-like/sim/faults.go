package sim

import (
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
)

// The simulation runs the catalog's abstract fault plans as they are.
type (
	// FaultKind is catalog.FaultKind.
	FaultKind = catalog.FaultKind
	// Fault is catalog.Fault.
	Fault = catalog.Fault
	// Timing is catalog.Timing, in virtual time.
	Timing = catalog.Timing
)

// The kinds of fault (catalog's).
const (
	Partition  = catalog.Partition
	ReplyLoss  = catalog.ReplyLoss
	Latency    = catalog.Latency
	PauseNode  = catalog.PauseNode
	Crash      = catalog.Crash
	ClockJump  = catalog.ClockJump
	ClockRate  = catalog.ClockRate
	CutLink    = catalog.CutLink
	Failover   = catalog.Failover
	ClientHold = catalog.ClientHold
	ClientStop = catalog.ClientStop
	Isolate    = catalog.Isolate
	Stall      = catalog.Stall
	ExpiryRace = catalog.ExpiryRace
	SplitSides = catalog.SplitSides
	UnlockLoss = catalog.UnlockLoss
)

// DefaultTiming: 5 workers, 1 s leases, 20 s of virtual time.
var DefaultTiming = Timing{Workers: 5, Lease: time.Second, Duration: 20 * time.Second}

// Scenarios are the catalog's scenarios the simulation runs (the others
// say why not in their NotOn).
var Scenarios = catalog.On(catalog.Sim)
