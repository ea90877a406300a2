package node

import (
	"testing"

	inode "github.com/quorumlock/quorumlock/internal/node"
)

// The constants are spelled out for go doc; they must stay the internal
// package's.
func TestConstantsAreTheNodes(t *testing.T) {
	if DefaultPrefix != inode.DefaultPrefix || ForcedRecordTTL != inode.ForcedRecordTTL {
		t.Fatalf("DefaultPrefix %q, ForcedRecordTTL %v; the node uses %q, %v", DefaultPrefix, ForcedRecordTTL, inode.DefaultPrefix, inode.ForcedRecordTTL)
	}
}
