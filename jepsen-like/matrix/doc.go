// Package matrix runs the lock modes × fault scenarios matrix: for every
// cell it starts a fresh cluster (package chaos), runs the workload
// (package workload) with the mode's lock while the scenario's faults
// strike, checks the history (package checker) and makes a report row
// (package report) that says whether the run reproduced or refuted the
// claim from the literature the cell tests.
//
// Modes, scenarios and the judgement of a cell are the catalog's
// (package jepsen-like/catalog), which the simulation reads too; the
// matrix realises each scenario it runs with chaos's faults, by the
// scenario's id.
//
// # Modes
//
// [Modes] are the lock configurations: single (one master), single+wait (a
// master and a replica, grants counted only after WAIT 1), failover (a
// master and an asynchronous replica, clients follow the master),
// redlock-3 and redlock-5 (a majority of independent masters),
// redlock-5+fencing (the same with fencing tokens checked by the
// resource), multilock-3 (all of three masters). A [Mode] builds each
// worker's lock through its [LockFunc]; other implementations join the
// matrix with their own (the bench module adds redsync and redislock so
// that this module does not depend on them).
//
// # Scenarios
//
// [Scenarios] are fault patterns: baseline, partition-minority,
// partition-majority, partition-all, latency, slow-acquire,
// clock-rate-fast, clock-rate-beyond, node-pause, crash-restart-aof,
// crash-restart-nopersist, crash-restart-delayed, failover, client-pause,
// holder-isolated, clock-jump, clock-jump-partition, random. Each lays
// out its faults from the cell's [RunTiming] (the workers' run time and the
// lease time), so a quick run and a long run do the same things at the
// same relative moments. Scenarios whose point is a fault striking a live
// holder (the crash-restart ones, the clock jumps, client-pause, holder-isolated) wait
// until a worker holds the lock and keep it in a long critical section —
// within its lease, except in client-pause and holder-isolated, whose point
// is a holder that outlives its lease — while the fault strikes;
// otherwise a fault would mostly land between tenures of a few
// milliseconds and prove nothing.
//
// # Expectations
//
// Scenario.Expect gives, per mode, the claim tested and whether the
// literature predicts the mode safe, with a sentence why. "Safe" is judged
// on the claim's property (checker.Property): mutual exclusion, valid-lease
// exclusion or data integrity. A fenced resource keeps the data correct
// under a client pause although the paused client's tenure overlaps the
// next one, so redlock-5+fencing is expected safe there and every unfenced
// mode unsafe. [Failures] are the rows expected safe that showed a
// violation of the claim's property; the CLI exits non-zero when there are
// any.
//
// # Time
//
// A cell costs its run time plus about 0.2 s (cluster start, check).
// [Quick] cells run 3 s with a 1 s lease; the whole matrix (89 cells) takes
// about 2½ minutes with two cells at a time on two cores.
package matrix
