package node

import "github.com/quorumlock/quorumlock/internal/node"

// PermissionError is a command the node's Redis user may not run, or a
// key or channel it may not touch (ACL). The library's errors carry one
// for each node that refused: find it with errors.As.
type PermissionError struct {
	// Command is the refused command in lower case ("publish", "multi"),
	// also when a Lua script ran it; it is empty when a key or channel
	// pattern was refused.
	Command string
	// Script names the library's script that ran the command, "" when the
	// client sent it directly.
	Script string
	// Err is the server's error.
	Err error
}

// Error says what to grant, then the server's error.
func (e *PermissionError) Error() string { return (*node.PermissionError)(e).Error() }

// Unwrap returns the server's error.
func (e *PermissionError) Unwrap() error { return e.Err }
