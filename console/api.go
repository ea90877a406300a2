package console

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// apiView is what GET /api/locks returns: what the page shows, as JSON.
type apiView struct {
	Updated time.Time `json:"updated"`
	Nodes   []string  `json:"nodes"`
	// Quorum is how many nodes an owner needs; 0 when no lock was seen.
	Quorum  int       `json:"quorum"`
	Pattern string    `json:"pattern"`
	Locks   []lockRow `json:"locks"`
	// More is whether more locks may match past this page; Next is the
	// cursor of the next page (GET /api/locks?cursor=NEXT).
	More    bool     `json:"more"`
	Next    string   `json:"next,omitempty"`
	ListErr string   `json:"list_error,omitempty"`
	Detail  *lockRow `json:"detail,omitempty"`
}

// api serves GET /api/locks[?name=NAME][&cursor=NEXT]: the page's content as JSON, for
// scripts and dashboards (same token rules as the page).
func (s *Console) api(w http.ResponseWriter, r *http.Request) {
	d := s.view(r)
	v := apiView{Updated: d.at, Nodes: d.Nodes, Quorum: d.Quorum, Pattern: d.Pattern, Locks: d.Locks, More: d.Next != "", Next: d.Next, ListErr: d.ListErr, Detail: d.Detail}
	if v.Locks == nil {
		v.Locks = []lockRow{}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// health is GET /healthz's answer.
type health struct {
	OK       bool `json:"ok"`
	Nodes    int  `json:"nodes"`
	Answered int  `json:"answered"`
	Quorum   int  `json:"quorum"`
}

// healthz answers 200 when a quorum of nodes answers within a second, 503 otherwise, with the counts as JSON. It needs no token and
// names no node or lock.
func (s *Console) healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	// Inspect of a name nobody uses: every node is asked at once, and the
	// answer carries the client's quorum (Majority or All).
	in, _ := s.c.Admin().Inspect(ctx, "quorumlock-console-healthz")
	h := health{Nodes: len(in.Nodes), Answered: in.Answered, Quorum: in.Quorum}
	h.OK = h.Answered >= h.Quorum
	w.Header().Set("Content-Type", "application/json")
	if !h.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(h)
}
