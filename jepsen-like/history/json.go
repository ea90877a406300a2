package history

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// FormatVersion is the version written by [History.WriteJSON].
const FormatVersion = 1

type envelope struct {
	Version int               `json:"version"`
	Meta    map[string]string `json:"meta,omitempty"`
	Ops     []Op              `json:"ops"`
}

// WriteJSON writes h as indented JSON, one object with "version", "meta" and
// "ops"; times are integer nanoseconds since the run's start.
func (h History) WriteJSON(w io.Writer) error {
	ops := h.Ops
	if ops == nil {
		ops = []Op{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(envelope{Version: FormatVersion, Meta: h.Meta, Ops: ops})
}

// ReadJSON reads a history written by WriteJSON and validates it.
func ReadJSON(r io.Reader) (History, error) {
	var e envelope
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return History{}, fmt.Errorf("history: decode: %w", err)
	}
	if e.Version != FormatVersion {
		return History{}, fmt.Errorf("%w: format version %d, this package reads %d", ErrInvalid, e.Version, FormatVersion)
	}
	h := History{Meta: e.Meta, Ops: e.Ops}
	if err := h.Validate(); err != nil {
		return History{}, err
	}
	return h, nil
}

// Save writes h to the file path (created or truncated).
func (h History) Save(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return h.WriteJSON(f)
}

// Load reads and validates a history from the file path.
func Load(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	h, err := ReadJSON(f)
	if err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
