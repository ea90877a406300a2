// Package seeded lets a simulation give a quorum.Client a seeded source of
// randomness (its id and its retries' jitter) so that a run replays from
// its seed. It is not part of the library's API: a program has no reason
// to make a client's choices predictable, and two clients given equal
// sources would take each other's locks for their own.
package seeded

import "math/rand/v2"

// Random is set by package quorum: it returns a quorum.Option that makes
// the client draw its random choices from src (nil: the default sources).
// Assert the result to quorum.Option.
var Random func(src rand.Source) any
