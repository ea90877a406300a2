package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// outcome is what a force-unlock did, carried to the page it redirects to.
type outcome struct {
	Name    string    `json:"n"`
	Removed int       `json:"r"`
	Nodes   int       `json:"t"`
	Err     string    `json:"e,omitempty"`
	At      time.Time `json:"a"`
}

// text is the message the page shows for o.
func (o outcome) text() string {
	if o.Err != "" {
		return fmt.Sprintf("Force-unlock of %s at %s: removed on %d of %d nodes; errors: %s", strconv.Quote(o.Name), o.At.Format("15:04:05"), o.Removed, o.Nodes, o.Err)
	}
	return fmt.Sprintf("Force-unlocked %s at %s: removed on %d of %d nodes", strconv.Quote(o.Name), o.At.Format("15:04:05"), o.Removed, o.Nodes)
}

// flasher seals the outcome a redirect carries in its ?flash= with a MAC
// under a per-process key, so the page shows only messages this console
// wrote: a link with ?flash=<any text> shows nothing.
type flasher struct{ key []byte }

func (f flasher) mac(payload string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte("flash\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// seal is o as a ?flash= value.
func (f flasher) seal(o outcome) string {
	b, _ := json.Marshal(o) // a struct of strings, ints and a time
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + f.mac(p)
}

// open is the message of a ?flash= value seal made, "" for any other.
func (f flasher) open(v string) string {
	if v == "" || len(v) > 4*maxForm {
		return ""
	}
	i := len(v) - 44 // '.' and a base64 SHA-256
	if i < 1 || v[i] != '.' || !hmac.Equal([]byte(v[i+1:]), []byte(f.mac(v[:i]))) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(v[:i])
	var o outcome
	if err != nil || json.Unmarshal(b, &o) != nil {
		return ""
	}
	return o.text()
}
