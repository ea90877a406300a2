// Package browsertest drives the console's page in a real browser
// (chromium through chromedp). It is a module of its own so the console,
// part of the library's module, does not make its users require chromedp.
package browsertest

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quorumlock/quorumlock/console"
	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/admin"
)

// chromiumPath finds Debian's chromium; outside CI a missing browser skips
// the test, in CI (localredis.Required) it fails it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("QUORUMLOCK_CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	const msg = "chromium not found (Debian package chromium; scripts/ensure-deps.sh installs it, or set QUORUMLOCK_CHROMIUM)"
	if localredis.Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactDir is where screenshots go: $QUORUMLOCK_ARTIFACTS, else a
// directory under the system temp dir that outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QUORUMLOCK_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "quorumlock-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves a full-page screenshot as dir/name.
func screenshot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			return err
		}
		t.Logf("screenshot: %s", p)
		return nil
	})
}

// clickNow clicks the element sel matches, finding and clicking it in one
// script step. chromedp.Click finds the node first and clicks it in a
// second call; the page's live refresh replaces the table in between now
// and then, and the click then fails with "Could not find node with given
// id" (a CI failure).
func clickNow(sel string) chromedp.Action[chromedp.Void] {
	q := strconv.Quote(sel)
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`(() => { const e = document.querySelector(`+q+`); if (!e) return false; e.click(); return true; })()`)(ctx, tg)
		return err
	})
}

// textNow reads the text of the element sel matches in one script step
// (see clickNow); "" if there is none.
func textNow(sel string) chromedp.Action[string] {
	return chromedp.Evaluate[string](`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); return e ? e.innerText : ""; })()`)
}

// End to end in headless Chromium: the page lists a held lock with its
// holder; the force-unlock button, behind its confirmation, releases it; a
// waiter blocked in Lock then acquires, and the page shows the new holder and
// who forced the lock.
func TestBrowserForceUnlock(t *testing.T) {
	exe := chromiumPath(t)
	const ttl = 10 * time.Second
	servers, c := nodes(t, 3, quorum.WithTTL(ttl))
	ctx := t.Context()
	m, _ := c.Mutex("orders/42", quorum.WithOwner("worker-1"))
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lease.Unlock(context.Background()) })

	// A fair lock with a long name, held by the default label (host:pid),
	// with one waiter in line: the widest row the page has to fit.
	const fairName = "reports/2026/11/nightly-billing-reconciliation"
	fm, _ := c.FairMutex(fairName)
	fl, err := fm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fl.Unlock(context.Background()) })
	fctx, fcancel := context.WithCancel(ctx)
	fdone := make(chan struct{})
	go func() {
		defer close(fdone)
		if l, err := fm.Lock(fctx); err == nil {
			_ = l.Unlock(context.Background())
		}
	}()
	t.Cleanup(func() { fcancel(); <-fdone })

	con, err := console.New(c, console.WithToken("e2e-token"), console.WithRefresh(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)

	// A waiter on its own client whose retry interval is far away: only the
	// force-unlock's wake-up lets it in quickly.
	wc, err := quorum.New(testutil.Clients(t, servers, nil), quorum.WithTTL(ttl), quorum.WithRetryInterval(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wc.Close() })
	// A fixed lease outlasting the test: the page must go on listing the
	// lock until the end. With a 10 s watchdog lease the row once vanished
	// at the last step of a CI run on a loaded machine (the lock no longer on
	// the answering nodes); the console is the subject here, not renewal.
	wm, _ := wc.Mutex("orders/42", quorum.WithOwner("worker-2"), quorum.WithLeaseTime(10*time.Minute))
	type won struct {
		l  *quorum.Lease
		at time.Time
	}
	acquired := make(chan won, 1)
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	go func() {
		l, err := wm.Lock(wctx)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(acquired)
			return
		}
		acquired <- won{l, time.Now()}
	}()

	dir := artifactDir(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 640),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first Run starts the browser and must not carry a timeout (it
	// would stop the browser); later steps get one.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	tctx, cancel := context.WithTimeout(bctx, 2*time.Minute) // 45 s ran out under three concurrent CI runs
	defer cancel()

	row := `tr[data-lock="orders/42"]`
	err = chromedp.Do(tctx,
		chromedp.Navigate(srv.URL+"/?token=e2e-token"),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-verdict="held"]`)),
		// Let a live refresh pass (the fragment, fetched with the token).
		chromedp.Sleep(400*time.Millisecond),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-verdict="held"]`)),
		screenshot(t, dir, "console-held.png"),
	)
	if err != nil {
		t.Fatalf("page with a held lock: %v", err)
	}
	holder, err := chromedp.Run(tctx, textNow(row+` td.holder`))
	if err != nil || holder != "worker-1" {
		t.Fatalf("holder shown %q (%v), want worker-1", holder, err)
	}

	// The token was swapped for a cookie: the address bar has none, and the
	// page's fetches (fragment, JSON) still work.
	search, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.search`))
	if err != nil || strings.Contains(search, "token") {
		t.Fatalf("the token is still in the address: %q (%v)", search, err)
	}
	apiStatus, err := chromedp.Run(tctx, chromedp.Evaluate[float64](`fetch('api/locks').then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || apiStatus != 200 {
		t.Fatalf("JSON endpoint from the page: %v (%v)", apiStatus, err)
	}
	// Held for, and the fair lock's line.
	fairRow := `tr[data-lock="` + fairName + `"]`
	err = chromedp.Do(tctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](`(() => { const td = document.querySelector('`+fairRow+` td.waiters'); return td && td.textContent.trim() === '1'; })()`,
			chromedp.WithPollingTimeout(10*time.Second))(ctx, tg)
		return err
	}))
	if err != nil {
		t.Fatalf("the fair lock's waiter is not shown: %v", err)
	}
	if held, err := chromedp.Run(tctx, textNow(row+` td.held-for`)); err != nil || held == "" {
		t.Fatalf("held for: %q (%v)", held, err)
	}
	// At 1280 px with 3 nodes the page does not scroll sideways and every
	// force-unlock button is inside the window.
	layout, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth, sw = document.documentElement.scrollWidth;
		const out = [];
		if (sw > w) out.push('page scrolls sideways: ' + sw + ' > ' + w);
		for (const b of document.querySelectorAll('button[data-force]')) {
			const r = b.getBoundingClientRect();
			if (r.right > w || r.left < 0) out.push('button of ' + b.dataset.force + ' at ' + r.left + '..' + r.right + ' outside 0..' + w);
		}
		return out.join('; ');
	})()`))
	if err != nil || layout != "" {
		t.Errorf("layout at 1280 px: %s (%v)", layout, err)
	}
	if err := chromedp.Do(tctx, screenshot(t, dir, "console-1280.png")); err != nil {
		t.Fatal(err)
	}

	err = chromedp.Do(tctx,
		clickNow(row+` button[data-force]`),
		chromedp.WaitVisible(chromedp.ID("force")),
		chromedp.SendKeys(chromedp.ID("force-by"), "e2e-operator"),
		chromedp.SendKeys(chromedp.ID("force-confirm"), "orders/4"), // not yet the whole name
	)
	if err != nil {
		t.Fatalf("confirmation dialog: %v", err)
	}
	disabled, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.getElementById('force-submit').disabled`))
	if err != nil || !disabled {
		t.Fatalf("force-unlock button enabled (%v) before the name was typed in full", err)
	}
	if ins, _ := c.Admin().Inspect(ctx, "orders/42"); ins.Verdict != admin.HeldByQuorum {
		t.Fatalf("lock changed before confirmation: %q", ins.Verdict)
	}
	err = chromedp.Do(tctx,
		chromedp.SendKeys(chromedp.ID("force-confirm"), "2"),
		screenshot(t, dir, "console-confirm.png"),
		chromedp.Click(chromedp.ID("force-submit")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	if err != nil {
		t.Fatalf("confirming: %v", err)
	}
	var waiter *quorum.Lease
	select {
	case w, ok := <-acquired:
		if !ok {
			t.FailNow()
		}
		waiter = w.l
		t.Cleanup(func() { _ = w.l.Unlock(context.Background()) })
		// The force record's time is taken just before the nodes are told.
		if ins, _ := c.Admin().Inspect(ctx, "orders/42"); ins.Forced != nil {
			t.Logf("waiter acquired %v after the force-unlock began (the force holds the nodes for the attempt timeout; the waiter's retry interval is 1m)", w.at.Sub(ins.Forced.At).Round(time.Millisecond))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not acquire after the force-unlock")
	}

	err = chromedp.Do(tctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[chromedp.Void](`(() => { const td = document.querySelector('tr[data-lock="orders/42"] td.holder'); return td && td.textContent.trim() === 'worker-2'; })()`,
				chromedp.WithPollingTimeout(10*time.Second))(ctx, tg)
			return err
		}),
		screenshot(t, dir, "console-after.png"),
	)
	if err != nil {
		t.Fatalf("page after the force-unlock: %v", err)
	}
	forced, err := chromedp.Run(tctx, textNow(`#detail .forced`))
	if want := `force-unlocked by "e2e-operator" at `; err != nil || !strings.HasPrefix(forced, want) || !strings.Contains(forced, " via console 127.0.0.1:") {
		t.Fatalf("page says %q (%v), want it to start with %q", forced, err, want)
	}

	// Degraded views: leftovers of a failed attempt on one node (amber),
	// then a node that stops answering (hatched, "no answer"); the held
	// lock stays held by the two answering nodes.
	// Its TTL outlasts the rest of the test: an expired leftover would not
	// be listed, and the page would never show it.
	// The waiter won on a majority, not necessarily on every node (the
	// force record can still hold one node when it tries there): the node
	// paused below is one it does not hold, if there is one, and the
	// leftover goes on another, so both rows stay decidable.
	ins, err := c.Admin().Inspect(ctx, "orders/42")
	if err != nil {
		t.Fatal(err)
	}
	pause, leftover := 2, 1
	for i, n := range ins.Nodes {
		if !n.State.Present {
			pause, leftover = i, (i+1)%len(servers)
		}
	}
	nd, err := node.New(servers[leftover].Client())
	if err != nil {
		t.Fatal(err)
	}
	ok, _, _, err := nd.Lock("jobs/stale", "ghost", "stale-attempt", false).Acquire(ctx, 5*time.Minute)
	if !ok || err != nil {
		t.Fatalf("leftover: %v %v", ok, err)
	}
	err = chromedp.Do(tctx,
		chromedp.Navigate(srv.URL+"/?token=e2e-token"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-lock="jobs/stale"][data-verdict="minority"]`)),
	)
	if err != nil {
		t.Fatalf("leftover on a minority: %v", err)
	}
	if err := servers[pause].Pause(); err != nil {
		t.Fatal(err)
	}
	defer servers[pause].Resume()
	err = chromedp.Do(tctx,
		chromedp.WaitVisible(chromedp.CSS(row+`[data-verdict="held"] td.cell.silent`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-lock="jobs/stale"][data-verdict="unknown"]`)),
		screenshot(t, dir, "console-degraded.png"),
	)
	if err != nil {
		dctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		page, _ := chromedp.Run(dctx, textNow(`body`))
		ins, ierr := c.Admin().Inspect(context.WithoutCancel(ctx), "orders/42")
		t.Fatalf("a node that does not answer: %v; the page says:\n%s\nthe waiter's lease: Err %v; Inspect orders/42: %+v (%v)", err, page, waiter.Err(), ins, ierr)
	}
}
