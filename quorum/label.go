package quorum

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/quorumlock/quorumlock/quorum/admin"
)

// WithLabel sets the human label this client puts in front of every owner
// it makes, so that operators (quorumlock locks, inspect, the console) see
// who holds a lock: "billing-worker-3" rather than a bare UUID. The label
// is for people only; each owner still ends with the client's UUID and a
// counter, so two clients with one label never share a lock. It must not
// contain a NUL byte; at most 100 bytes. Default "host:pid" of this
// process. Owners given with WithOwner are used as they are.
func WithLabel(label string) Option { return func(c *config) { c.label, c.labelSet = label, true } }

// ownerSep separates the label from the client's UUID in an owner
// (admin.OwnerLabel reads it back).
const ownerSep = admin.OwnerSep

// defaultLabel is host:pid.
func defaultLabel() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown-host"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// clientID is the prefix of the owners a client makes: label#uuid.
func clientID(cfg config) (string, error) {
	label := cfg.label
	if !cfg.labelSet {
		label = defaultLabel()
	}
	if strings.ContainsRune(label, 0) {
		return "", errors.New("quorumlock: WithLabel: the label must not contain a NUL byte")
	}
	if len(label) > 100 {
		return "", errors.New("quorumlock: WithLabel: the label is longer than 100 bytes; use a short name such as the service and instance")
	}
	if label == "" {
		return uuid.NewString(), nil
	}
	return label + ownerSep + uuid.NewString(), nil
}
