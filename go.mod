module github.com/quorumlock/quorumlock

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.17.3
	golang.org/x/sync v0.24.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)
