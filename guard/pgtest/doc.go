// Package pgtest runs the guard package's SQL fences against a real
// PostgreSQL server. It is its own module, so the PostgreSQL driver (pgx)
// its tests need never becomes a requirement of the library's module.
package pgtest
