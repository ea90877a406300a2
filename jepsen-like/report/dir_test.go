package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// ReadDir merges the cells' files in name order, and gives a row its
// timeline when its history lies beside it.
func TestReadDirMergesCells(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r Row) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := (Matrix{Seed: 7, Results: []Row{r}}).WriteJSON(f); err != nil {
			t.Fatal(err)
		}
	}
	write("0001-0000.json", Row{Mode: "redlock-3", Scenario: "random", Replay: "second"})
	write("0000-0000.json", Row{Mode: "single", Scenario: "baseline", Replay: "first"})
	h := history.History{Ops: []history.Op{
		{ID: 1, Worker: 0, Kind: history.Acquire, Invoke: 1, Complete: 2, Outcome: history.Ok},
		{ID: 2, Worker: 0, Kind: history.Release, Invoke: 3, Complete: 4, Outcome: history.Ok, Lease: 1},
	}}
	if err := h.Save(filepath.Join(dir, "0001-0000"+HistorySuffix)); err != nil {
		t.Fatal(err)
	}
	m, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seed != 7 || len(m.Results) != 2 || m.Results[0].Replay != "first" || m.Results[1].Replay != "second" {
		t.Fatalf("merged %+v", m)
	}
	if m.Results[0].Timeline != nil || m.Results[1].Timeline == nil || len(m.Results[1].Timeline.Tenures) != 1 {
		t.Fatalf("timelines: %v, %v", m.Results[0].Timeline, m.Results[1].Timeline)
	}
}
