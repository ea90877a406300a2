// Package adapters puts quorumlock and its peers behind one small interface,
// so benchmarks and the chaos matrix can run every implementation on the
// same workload: go-redsync/redsync (RedLock by polling), bsm/redislock
// (single node, polling) and a raw floor (SET NX PX and a Lua
// compare-and-delete, the least any lock on Redis can cost).
//
// It lives in the bench module so that the library's go.mod never requires a
// competitor.
//
//	l, err := adapters.New(clients, adapters.Config{Kind: adapters.Redsync, RetryDelay: 5 * time.Millisecond})
//	m, _ := l.Mutex("orders")
//	lease, err := m.Lock(ctx)   // waits; TryLock tries once
//	...
//	err = lease.Unlock(ctx)
//
// Every failure to obtain a lock wraps ErrNotObtained, whatever the
// implementation's own error is.
package adapters
