package console

import (
	"sync"
	"time"
)

// heldSince remembers when this console first saw each lock held by its
// current holder. Redis keeps no acquisition time (the watchdog re-arms the
// TTL), so "held for" is a lower bound: the time since the console first
// saw that holder, marked as such when the holder was already there at the
// console's first look.
type heldSince struct {
	mu    sync.Mutex
	start time.Time            // the first view
	first map[string]time.Time // name + "\x00" + holders -> first seen
}

// observe records that name is held by holders (joined) at now and
// returns since when, and whether that is only a lower bound (the holder
// was there at the console's first look). keep lists every key seen in
// this view; the others are forgotten.
func (h *heldSince) observe(now time.Time, seen map[string]bool, key string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first, h.start = map[string]time.Time{}, now
	}
	t, ok := h.first[key]
	if !ok {
		t = now
		h.first[key] = t
	}
	seen[key] = true
	return t, t.Equal(h.start)
}

// forget drops the holders not seen in the last full view.
func (h *heldSince) forget(seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.first {
		if !seen[k] {
			delete(h.first, k)
		}
	}
}
