// Package catalog is the one list of what the chaos suite tests: lock
// modes (Modes), fault scenarios (Scenarios), workloads (Workloads) and
// the properties a cell is judged on (Judge). Every runner reads it: the
// real-process matrix (jepsen-like/matrix) maps each scenario to package
// chaos's faults, the deterministic simulation (jepsen-like/sim) to its
// in-memory ones. A scenario or workload a runner cannot run says so in
// its NotOn, with the reason, instead of being rebuilt elsewhere.
//
// A scenario's Faults is its plan in an abstract form (Fault: which
// nodes or which holder, which kind, when, for how long), drawn from a
// seed. The simulation runs the plan as it is. The matrix realises each
// scenario against a running cluster (chaos's faults, proxies, gates that
// catch a holder), under the same id; TestRealisations in the matrix
// checks that every scenario it runs has one.
//
// The package imports neither chaos nor testcontainers, so the
// simulation does not either (TestNoHarnessDependency in jepsen-like/sim).
package catalog
