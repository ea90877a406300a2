package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/quorum"
)

// The console lists a page of at most its limit, with the cursor of the
// next; following the cursors shows every held name once. A cursor the
// console did not give shows the first page and says so.
func TestPaging(t *testing.T) {
	_, c := nodes(t, 3, quorum.WithTTL(10*time.Second))
	ctx := t.Context()
	want := map[string]bool{}
	for i := range 23 {
		name := fmt.Sprintf("orders/%02d", i)
		m, err := c.Mutex(name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Unlock(context.Background()) })
		want[name] = true
	}
	con, err := New(c, WithLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)

	got := map[string]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		code, body := get(t, srv, "/api/locks?cursor="+url.QueryEscape(cursor), nil)
		var v apiView
		if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.ListErr != "" {
			t.Fatalf("page %d: %d %s", pages, code, body)
		}
		if len(v.Locks) > 5 {
			t.Fatalf("page %d shows %d locks over the limit 5", pages, len(v.Locks))
		}
		for _, l := range v.Locks {
			if got[l.Name] || !want[l.Name] {
				t.Fatalf("page %d: %q shown again or not held", pages, l.Name)
			}
			got[l.Name] = true
		}
		if v.More != (v.Next != "") {
			t.Fatalf("page %d: more %v with next %q", pages, v.More, v.Next)
		}
		// The HTML page of the same cursor links to the same next page.
		_, page := get(t, srv, "/?cursor="+url.QueryEscape(cursor), nil)
		link := regexp.MustCompile(`href="\?cursor=([^"]*)" rel="next"`).FindStringSubmatch(page)
		if (link != nil) != v.More {
			t.Fatalf("page %d: next link %q, more %v", pages, link, v.More)
		}
		if cursor != "" && !strings.Contains(page, `<a href="./">first page</a>`) {
			t.Fatalf("page %d has no link to the first page", pages)
		}
		if !v.More {
			break
		}
		if next, _ := url.QueryUnescape(html.UnescapeString(link[1])); next != v.Next {
			t.Fatalf("page %d: the page links to %q, the JSON says %q", pages, next, v.Next)
		}
		if pages > 20 {
			t.Fatal("the pages do not end")
		}
		cursor = v.Next
	}
	if len(got) != len(want) {
		t.Fatalf("shown %d of %d", len(got), len(want))
	}

	code, body := get(t, srv, "/api/locks?cursor=not-ours", nil)
	var v apiView
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || len(v.Locks) != 5 ||
		!strings.Contains(v.ListErr, "showing the first page") || strings.Count(v.ListErr, "quorumlock:") != 1 {
		t.Fatalf("a foreign cursor: %d %s", code, body)
	}
}
