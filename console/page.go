package console

import (
	"net/url"
	"strconv"
	"strings"
)

// The page is written by hand rather than by html/template: a template
// calls methods by name through reflect, which makes the linker keep every
// exported method of every type in the binary (go-redis' whole command set
// in the CLI). So every value goes through one of the escapers below, by
// where it lands: text or a double-quoted attribute (esc), a URL's query
// value (url.QueryEscape, then esc). No value is ever written into the
// script or the style sheet, or into an unquoted attribute.

// htmlEscaper escapes text and double-quoted attribute values, with the
// entities html/template writes.
var htmlEscaper = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&#34;",
	"'", "&#39;",
	"\x00", "\uFFFD",
)

// markup writes the page piece by piece; t writes markup (constants only),
// e escapes a value.
type markup struct{ strings.Builder }

func (h *markup) t(s string) { h.WriteString(s) }

func (h *markup) e(s string) { _, _ = htmlEscaper.WriteString(&h.Builder, s) }

func (h *markup) n(n int64) { h.WriteString(strconv.FormatInt(n, 10)) }

// nz writes n unless it is zero.
func (h *markup) nz(n int64) {
	if n != 0 {
		h.n(n)
	}
}

// renderPage writes the whole page; the live part is also served alone
// (renderLive) for the page's refreshes.
func renderPage(d *pageData) string {
	var h markup
	h.t(pageHead)
	h.t(`<header>
  <h1>quorumlock console</h1>
  <p class="meta">`)
	h.n(int64(len(d.Nodes)))
	h.t(` nodes · locks matching <code>`)
	h.e(d.Pattern)
	h.t(`</code> · refresh every `)
	h.n(d.RefreshMS)
	h.t(` ms · <a href="`)
	h.e(d.APIURL)
	h.t(`" style="color:#c3cad6">JSON</a> · <span id="status" class="ok">live</span></p>
</header>
`)
	if d.Flash != "" {
		h.t(`<p class="flash" role="status" id="flash">`)
		h.e(d.Flash)
		h.t(`</p>`)
	}
	h.t(`
<div class="bar-top">
  <form method="get" action="./">
    <label>Inspect a lock <input name="name" placeholder="orders/42" value="`)
	h.e(d.Name)
	h.t(`"></label>
    <button type="submit">Inspect</button>
  </form>
  <p class="legend"><span><i style="background:#1f8a4c"></i>quorum holder's TTL</span><span><i style="background:#b7791f"></i>other owner (leftover)</span><span><i style="background:#fed7d7"></i>no answer</span></p>
</div>
<main id="live" data-live="`)
	h.e(d.LiveURL)
	h.t(`" data-every="`)
	h.n(d.RefreshMS)
	h.t(`">`)
	live(&h, d)
	h.t(`</main>

<dialog id="force">
  <form method="post" action="unlock">
    <h2>Force-unlock <code id="force-name"></code>?</h2>
    <p>The lock is removed on every node and waiters are woken. A holder that is still running is <strong>no longer protected</strong>: its lease ends at its next renewal. Your name and the time are recorded next to the lock for 24 hours.</p>
    <input type="hidden" name="key" value="`)
	h.e(d.FormKey)
	h.t(`">
    <input type="hidden" name="name" id="force-name-input">
    <label>Type the lock's name to confirm <input name="confirm" id="force-confirm" autocomplete="off" required></label>
    <label>Your name <input name="by" id="force-by" autocomplete="off" required></label>
    <div class="buttons">
      <button type="button" id="force-cancel">Cancel</button>
      <button type="submit" class="danger" id="force-submit" disabled>Force unlock</button>
    </div>
  </form>
</dialog>

`)
	h.t(pageScript)
	return h.String()
}

// renderLive writes the part of the page that refreshes itself: the table
// of locks and, for ?name=, one lock in full.
func renderLive(d *pageData) string {
	var h markup
	live(&h, d)
	return h.String()
}

func live(h *markup, d *pageData) {
	h.t(`<p class="meta">Updated `)
	h.e(d.Updated)
	if d.Quorum != 0 {
		h.t(` · an owner needs `)
		h.n(int64(d.Quorum))
		h.t(` of `)
		h.n(int64(len(d.Nodes)))
		h.t(` nodes`)
	}
	h.t(` · `)
	h.n(int64(len(d.Locks)))
	h.t(` lock`)
	if len(d.Locks) != 1 {
		h.t(`s`)
	}
	h.t("</p>\n")
	if d.ListErr != "" {
		h.t(`<p class="error">Some nodes did not answer: `)
		h.e(d.ListErr)
		h.t(`</p>`)
	}
	h.t(`
<div class="scroll">
<table class="locks">
  <thead><tr>
    <th>Lock</th><th>Verdict</th><th>Holder</th><th title="Since this console first saw the holder (≥: it was there when the console started)">Held for</th><th title="Waiters in a fair lock's line">Waiters</th><th>Holds</th><th title="How long a quorum keeps it without renewal">TTL</th><th>Fence</th>
    `)
	for _, n := range d.Nodes {
		h.t(`<th class="node">`)
		h.e(n)
		h.t(`</th>`)
	}
	h.t(`
    <th class="act"></th>
  </tr></thead>
  <tbody>
`)
	for i := range d.Locks {
		lockTR(h, &d.Locks[i])
	}
	if len(d.Locks) == 0 {
		h.t(`  <tr><td colspan="`)
		h.n(int64(d.Cols))
		h.t(`" class="meta">No lock matches <code>`)
		h.e(d.Pattern)
		h.t("</code>.</td></tr>\n")
	}
	h.t(`  </tbody>
</table>
</div>
`)
	if d.Next != "" || d.Cursor != "" {
		h.t(`<p class="meta pages">`)
		if d.Cursor != "" {
			h.t(`<a href="./">first page</a> `)
		}
		if d.Next != "" {
			h.t(`<a href="?cursor=`)
			h.e(url.QueryEscape(d.Next))
			h.t(`" rel="next">next page</a> (more locks may match; a narrower pattern shows fewer)`)
		}
		h.t(`</p>`)
	}
	h.t("\n")
	if d.Detail != nil {
		detail(h, d.Detail)
	}
}

// lockTR writes one lock's row of the table.
func lockTR(h *markup, l *lockRow) {
	h.t(`  <tr data-lock="`)
	h.e(l.Name)
	h.t(`" data-verdict="`)
	h.e(l.Verdict)
	h.t(`">
    <td class="name"><a href="?name=`)
	h.e(url.QueryEscape(l.Name))
	h.t(`" title="`)
	h.e(l.Name)
	h.t(`">`)
	h.e(l.Name)
	h.t(`</a>`)
	if l.Mode != "" {
		h.t(` <small>(`)
		h.e(l.Mode)
		h.t(`)</small>`)
	}
	if l.ForcedShort != "" {
		h.t(`<div class="forced" title="`)
		h.e(l.Forced)
		h.t(`">`)
		h.e(l.ForcedShort)
		h.t(`</div>`)
	}
	h.t(`</td>
    <td><span class="badge v-`)
	h.e(l.Verdict)
	h.t(`" title="`)
	h.e(l.Summary)
	h.t(`">`)
	h.e(l.Verdict)
	h.t(`</span></td>
    <td class="holder" title="`)
	h.e(l.HolderID)
	h.t(`">`)
	h.e(l.Holder)
	h.t(`</td>
    <td class="num held-for">`)
	h.e(l.HeldFor)
	h.t(`</td>
    <td class="num waiters">`)
	h.nz(int64(l.Waiters))
	h.t(`</td>
    <td class="num">`)
	h.nz(l.Holds)
	h.t(`</td>
    <td class="num">`)
	h.e(l.TTL)
	h.t(`</td>
    <td class="num">`)
	h.nz(l.Fence)
	h.t(`</td>
    `)
	for i := range l.Cells {
		c := &l.Cells[i]
		h.t(`<td class="cell `)
		h.e(c.Class)
		h.t(`" title="`)
		h.e(c.Node)
		h.t(`: `)
		switch {
		case c.Err != "":
			h.e(c.Err)
		case c.Owner != "":
			h.e(c.Owner)
			h.t(` ×`)
			h.n(c.Holds)
			h.t(`, `)
			h.e(c.Label)
			h.t(` left`)
		default:
			h.t(`absent`)
		}
		// Pct is a number the console computed, never a name.
		h.t(`"><div class="bar"><i style="width: `)
		h.t(strconv.FormatFloat(c.Pct, 'f', 1, 64))
		h.t(`%"></i></div><small>`)
		h.e(c.Label)
		h.t(`</small></td>`)
	}
	h.t(`
    <td class="act">`)
	if l.Verdict != "free" {
		h.t(`<button type="button" class="danger" data-force="`)
		h.e(l.Name)
		h.t(`">Force unlock…</button>`)
	}
	h.t("</td>\n  </tr>\n")
}

// detail writes one lock in full, node by node.
func detail(h *markup, l *lockRow) {
	h.t(`<section class="detail" id="detail" data-verdict="`)
	h.e(l.Verdict)
	h.t(`">
  <h2><code>`)
	h.e(l.Name)
	h.t(`</code> <span class="badge v-`)
	h.e(l.Verdict)
	h.t(`">`)
	h.e(l.Verdict)
	h.t(`</span></h2>
  <p class="meta">`)
	h.e(l.Summary)
	if l.Holder != "" {
		h.t(` · holder `)
		h.e(l.Holder)
	}
	if l.HeldFor != "" {
		h.t(` · held for `)
		h.e(l.HeldFor)
	}
	if l.Waiters != 0 {
		h.t(` · `)
		h.n(int64(l.Waiters))
		h.t(` waiting in line`)
	}
	if l.TTL != "" {
		h.t(` · `)
		h.e(l.TTL)
		h.t(` left`)
	}
	if l.Fence != 0 {
		h.t(` · fence `)
		h.n(l.Fence)
	}
	h.t("</p>\n  ")
	if l.Forced != "" {
		h.t(`<p class="forced">`)
		h.e(l.Forced)
		h.t(`</p>`)
	}
	h.t(`
  <table>
    <thead><tr><th>Node</th><th>State</th><th>Owner</th><th>Holds</th><th>TTL</th><th>Fence</th><th>Mode</th></tr></thead>
    <tbody>
    `)
	for i := range l.Cells {
		c := &l.Cells[i]
		h.t(`<tr class="`)
		h.e(c.Class)
		h.t(`"><td><code>`)
		h.e(c.Node)
		h.t(`</code></td><td>`)
		switch {
		case c.Err != "":
			h.t(`no answer: `)
			h.e(c.Err)
		case c.Owner != "" && c.Class == "holder":
			h.t(`holds`)
		case c.Owner != "":
			h.t(`leftover`)
		default:
			h.t(`absent`)
		}
		h.t(`</td><td title="`)
		h.e(c.OwnerID)
		h.t(`">`)
		h.e(c.Owner)
		h.t(`</td><td class="num">`)
		h.nz(c.Holds)
		h.t(`</td><td class="num">`)
		if c.Owner != "" {
			h.e(c.Label)
		}
		h.t(`</td><td class="num">`)
		h.nz(c.Fence)
		h.t(`</td><td>`)
		h.e(c.Mode)
		h.t(`</td></tr>`)
	}
	h.t(`
    </tbody>
  </table>
</section>
`)
}

// pageHead is the page up to its body: the style sheet, with no value in it.
const pageHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>quorumlock console</title>
<style>
  :root { --fg:#1d2430; --muted:#5d6878; --line:#dde2ea; --bg:#f6f8fb; --card:#fff;
          --held:#1f8a4c; --minority:#b7791f; --free:#718096; --unknown:#c53030; }
  * { box-sizing: border-box; }
  body { margin:0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color:var(--fg); background:var(--bg); }
  header { padding:14px 24px; background:#1d2430; color:#fff; display:flex; align-items:baseline; gap:18px; flex-wrap:wrap; }
  header h1 { font-size:18px; margin:0; font-weight:600; }
  header .meta { color:#c3cad6; margin:0; }
  #status.ok::before { content:"● "; color:#48bb78; }
  #status.bad { color:#feb2b2; }
  main, .bar-top { padding:16px 24px; }
  .bar-top { padding-bottom:0; display:flex; gap:16px; align-items:center; flex-wrap:wrap; }
  .flash { margin:12px 24px 0; padding:10px 14px; background:#ebf8ff; border:1px solid #90cdf4; border-radius:6px; }
  .error { padding:8px 12px; background:#fff5f5; border:1px solid #feb2b2; border-radius:6px; color:#822727; }
  .meta { color:var(--muted); margin:0 0 8px; }
  table { border-collapse:collapse; background:var(--card); border:1px solid var(--line); border-radius:6px; width:100%; }
  th, td { padding:7px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:middle; white-space:nowrap; }
  th { font-weight:600; color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.03em; background:#fafbfd; }
  th.node { text-transform:none; font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:11px; }
  td.name a { font-family:ui-monospace, "DejaVu Sans Mono", monospace; color:var(--fg); font-weight:600; text-decoration:none; }
  td.name a:hover { text-decoration:underline; }
  td.num { text-align:right; font-variant-numeric:tabular-nums; }
  .badge { display:inline-block; padding:1px 8px; border-radius:10px; color:#fff; font-size:12px; font-weight:600; }
  .v-held { background:var(--held); } .v-minority { background:var(--minority); }
  .v-free { background:var(--free); } .v-unknown { background:var(--unknown); }
  .forced { color:#9c4221; font-size:12px; white-space:normal; }
  .cell { min-width:64px; }
  .scroll { overflow-x:auto; max-width:100%; }
  td.name { max-width:260px; overflow:hidden; text-overflow:ellipsis; }
  td.holder { max-width:200px; overflow:hidden; text-overflow:ellipsis; }
  th.node { white-space:normal; overflow-wrap:anywhere; min-width:64px; max-width:140px; }
  th.act, td.act { position:sticky; right:0; background:var(--card); box-shadow:-6px 0 6px -6px rgba(0,0,0,.2); }
  th.act { background:#fafbfd; }
  td.act button { padding:4px 9px; }
  .bar { height:8px; background:#edf0f5; border-radius:4px; overflow:hidden; }
  .bar i { display:block; height:100%; }
  .holder .bar i { background:var(--held); } .other .bar i { background:var(--minority); }
  .silent .bar { background:repeating-linear-gradient(45deg,#fed7d7 0 4px,#fff5f5 4px 8px); }
  .cell small { color:var(--muted); font-variant-numeric:tabular-nums; }
  .silent small { color:var(--unknown); }
  button { font:inherit; padding:5px 12px; border-radius:5px; border:1px solid #b8c2d0; background:#fff; cursor:pointer; }
  button.danger { border-color:#c53030; color:#c53030; }
  button.danger:hover:not(:disabled) { background:#c53030; color:#fff; }
  button:disabled { opacity:.45; cursor:not-allowed; }
  input { font:inherit; padding:5px 8px; border:1px solid #b8c2d0; border-radius:5px; }
  .detail { margin-top:22px; }
  .detail h2 { font-size:16px; margin:0 0 4px; }
  .detail h2 code { font-size:15px; }
  dialog { border:1px solid var(--line); border-radius:8px; padding:20px 22px; max-width:460px; box-shadow:0 10px 30px rgba(0,0,0,.2); }
  dialog h2 { margin:0 0 8px; font-size:17px; }
  dialog label { display:block; margin:10px 0; color:var(--muted); }
  dialog input { display:block; width:100%; margin-top:4px; }
  dialog .buttons { display:flex; justify-content:flex-end; gap:8px; margin-top:14px; }
  .legend span { margin-right:14px; color:var(--muted); }
  .legend i { display:inline-block; width:14px; height:8px; border-radius:3px; margin-right:4px; vertical-align:middle; }
</style>
</head>
<body>
`

// pageScript is the page's script and end, with no value in it: the script
// reads what it needs from data- attributes. It refreshes the live part one
// request at a time: the next starts after the last answered (a node that
// does not answer makes a refresh take up to a few seconds). A refresh that
// gets no answer in 20 s is given up, so that one lost request cannot stop
// the live view for good.
const pageScript = `<script>
(function () {
  const live = document.getElementById('live');
  const status = document.getElementById('status');
  const every = Number(live.dataset.every) || 1000;
  async function refresh() {
    try {
      const r = await fetch(live.dataset.live, {cache: 'no-store', signal: AbortSignal.timeout(20000)});
      if (!r.ok) throw new Error('HTTP ' + r.status);
      live.innerHTML = await r.text();
      status.textContent = 'live'; status.className = 'ok';
    } catch (e) {
      status.textContent = 'disconnected (' + e.message + ')'; status.className = 'bad';
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);

  const dlg = document.getElementById('force');
  const nameOut = document.getElementById('force-name');
  const nameIn = document.getElementById('force-name-input');
  const confirmIn = document.getElementById('force-confirm');
  const byIn = document.getElementById('force-by');
  const submit = document.getElementById('force-submit');
  function check() { submit.disabled = confirmIn.value !== nameIn.value || byIn.value.trim() === ''; }
  confirmIn.addEventListener('input', check);
  byIn.addEventListener('input', check);
  document.getElementById('force-cancel').addEventListener('click', () => dlg.close());
  dlg.querySelector('form').addEventListener('submit', () => {
    try { localStorage.setItem('quorumlock.by', byIn.value.trim()); } catch (e) {}
  });
  live.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-force]');
    if (!b) return;
    nameOut.textContent = b.dataset.force;
    nameIn.value = b.dataset.force;
    confirmIn.value = '';
    try { byIn.value = localStorage.getItem('quorumlock.by') || ''; } catch (e) {}
    check();
    dlg.showModal();
    confirmIn.focus();
  });
})();
</script>
</body>
</html>`
