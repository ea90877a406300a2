package mutants

// elecproofMutants break the election's promises one at a time, each
// caught by the election workload's checks (checker.ElectionTerms).
var elecproofMutants = []Mutant{
	{
		Name:  "election-term-reused",
		Bug:   "the term number loses its low bits: successive leaders share one",
		File:  "quorum/election.go",
		Old:   "number: lease.Token(), elected:",
		New:   "number: lease.Token() >> 8, elected:",
		Cells: []CellID{{"redlock-3", "baseline", "election"}},
	},
	{
		Name:  "election-term-decreasing",
		Bug:   "term numbers run downwards: distinct, but a later leader's term is lower",
		File:  "quorum/election.go",
		Old:   "func (t *Term) Token() int64 { return t.number }",
		New:   "func (t *Term) Token() int64 { return 1<<60 - t.number }",
		Cells: []CellID{{"redlock-3", "baseline", "election"}},
	},
	{
		Name:  "election-loss-untold",
		Bug:   "a term's Done channel is not the term's: it never closes, so a leader is not told of a lost term",
		File:  "quorum/election.go",
		Old:   "func (t *Term) Done() <-chan struct{} { return t.ctx.Done() }",
		New:   "func (t *Term) Done() <-chan struct{} { return make(chan struct{}) }",
		Cells: []CellID{{"redlock-3", "holder-isolated", "election"}},
		CI:    true,
	},
	{
		Name:  "election-observe-lags",
		Bug:   "Observe hands out the change before the one it just read: a term reaches followers only when the next one begins",
		File:  "quorum/election.go",
		Old:   "case out <- noTerm(ch):",
		New:   "case out <- noTerm(last):",
		Cells: []CellID{{"redlock-3", "baseline", "election"}},
	},
	{
		Name:  "campaign-polls-slowly",
		Bug:   "a waiting Lock or campaign ignores pub/sub and tries again only every 10 s",
		File:  "quorum/waiter.go",
		Old:   "\tt := time.NewTimer(d)\n\tdefer t.Stop()\n\tfor {\n\t\tselect {\n\t\tcase <-k.signal():\n",
		New:   "\tt := time.NewTimer(10 * time.Second)\n\tdefer t.Stop()\n\tfor {\n\t\tselect {\n\t\tcase <-make(chan struct{}):\n",
		Cells: []CellID{{"redlock-3", "holder-isolated", "election"}, {"redlock-3", "baseline", "election"}},
	},
}
