package node

import (
	_ "embed"
)

// The scripts a lock handle and a force run, embedded from their .lua files
// (a comment per branch in each).
var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed release.lua
	releaseLua string
	//go:embed release_hash.lua
	releaseHashLua string
	//go:embed extend.lua
	extendLua string
	//go:embed fence.lua
	fenceLua string
	//go:embed fence_seed.lua
	fenceSeedLua string
	//go:embed force_release.lua
	forceReleaseLua string
	//go:embed force_finish.lua
	forceFinishLua string
	//go:embed lock_lib.lua
	lockLibLua string
	//go:embed acquire_lib.lua
	acquireLibLua string

	// Scripts run by SHA (EVALSHA) with a fallback to the body (EVAL) when
	// the server's script cache does not have them.
	acquireScript = script("acquire", lockLibLua+acquireLibLua+acquireLua)
	// release.lua comes before the prelude: the common release (the
	// fast-path string) returns before the prelude's functions are built,
	// saving the server that work on every release.
	releaseScript      = script("release", releaseLua+lockLibLua+releaseHashLua)
	extendScript       = script("extend", lockLibLua+extendLua)
	fenceScript        = script("fence", lockLibLua+fenceLua)
	fenceSeedScript    = script("fence-seed", lockLibLua+acquireLibLua+fenceSeedLua)
	forceReleaseScript = script("force-release", forceReleaseLua)
	forceFinishScript  = script("force-finish", promoted(forceFinishLua))
)

// promoted is a script that first turns a fast-path string lock into its hash
// form (lock_lib.lua), for scripts that read the lock only as a hash.
func promoted(body string) string { return lockLibLua + "promote()\n" + body }
