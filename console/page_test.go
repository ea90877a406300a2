package console

import (
	"html"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Every value the page shows comes from a node, a lock's name or an
// operator, so each is escaped where it lands: a hostile value shows as
// text, never as markup, in the page and in the live part alone.
func TestPageEscapesEveryValue(t *testing.T) {
	n := 0
	var payloads []string
	// hostile returns a value that, written raw, would close an attribute
	// and open an element; each is numbered to tell which field leaked.
	hostile := func() string {
		n++
		p := `v` + strconv.Itoa(n) + `"'><img src=x onerror=alert(1)>&amp;`
		payloads = append(payloads, p)
		return p
	}
	row := func(verdict string) lockRow {
		return lockRow{
			Name: hostile(), Verdict: verdict, Summary: hostile(), Holder: hostile(), HolderID: hostile(),
			HeldFor: hostile(), Waiters: 1, Holds: 2, TTL: hostile(), Fence: 3, Mode: hostile(),
			Forced: hostile(), ForcedShort: hostile(),
			Cells: []cell{
				{Node: hostile(), Class: "holder", Pct: 50, Label: hostile(), Owner: hostile(), OwnerID: hostile(), Holds: 1, Mode: hostile()},
				{Node: hostile(), Class: "silent", Label: "no answer", Err: hostile()},
			},
		}
	}
	// The table and the detail show different fields of a lock: the
	// same lock in both covers them all.
	lock := row("held")
	d := pageData{
		Nodes: []string{hostile(), hostile()}, Quorum: 2, Pattern: hostile(), RefreshMS: 1000,
		LiveURL: hostile(), APIURL: hostile(), Name: hostile(), Cols: 11, FormKey: hostile(),
		Updated: hostile(), Locks: []lockRow{lock}, Cursor: "c", Next: "n", ListErr: hostile(),
		Detail: &lock, Flash: hostile(),
	}
	page, live := renderPage(&d), renderLive(&d)
	for _, p := range payloads {
		if strings.Contains(page, p) || strings.Contains(live, p) {
			t.Errorf("%q is written raw", p)
		}
		if !strings.Contains(page, html.EscapeString(p)) {
			t.Errorf("the page does not show %q escaped", p)
		}
	}
	if strings.Contains(page, "<img") || strings.Contains(live, "<img") {
		t.Errorf("a value became an element:\n%s", page)
	}
	// A link to a lock carries its name as a query value.
	if want := `href="?name=` + url.QueryEscape(lock.Name) + `"`; !strings.Contains(page, want) {
		t.Errorf("page lacks the lock's link %s", want)
	}
	// The live part is the page's: what the page refreshes is what it shows.
	if !strings.Contains(page, `<main id="live" data-live="`+html.EscapeString(d.LiveURL)+`" data-every="1000">`+live+`</main>`) {
		t.Error("the page's live part differs from the fragment")
	}
}
