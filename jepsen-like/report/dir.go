package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
)

// HistorySuffix names the history beside a row file in a directory
// ReadDir reads: X.json's history is X.history.
const HistorySuffix = ".history"

// ReadDir merges the matrix files (WriteJSON) in dir, in name order, into
// one matrix: a runner whose cells run in processes of their own (the
// simulation's) writes one per cell. A file X.json with a history
// X.history beside it (history.Save) gets its timeline, from the
// row file's first row.
func ReadDir(dir string) (Matrix, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return Matrix{}, err
	}
	slices.Sort(names)
	var m Matrix
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return Matrix{}, err
		}
		part, err := ReadJSON(f)
		_ = f.Close()
		if err != nil {
			return Matrix{}, fmt.Errorf("report: %s: %w", name, err)
		}
		if len(part.Results) == 0 {
			continue
		}
		h, err := history.Load(strings.TrimSuffix(name, ".json") + HistorySuffix)
		switch {
		case err == nil:
			part.Results[0].Timeline = NewTimeline(h)
		case !errors.Is(err, os.ErrNotExist):
			return Matrix{}, fmt.Errorf("report: %s: %w", name, err)
		}
		m.Seed = part.Seed
		m.Results = append(m.Results, part.Results...)
	}
	return m, nil
}
