package mutants

// elecproofMutants break the election's promises one at a time, each
// caught by the election workload's checks (checker.ElectionTerms).
var elecproofMutants = []Mutant{
	{
		Name:  "election-term-reused",
		Bug:   "the term number loses its low bits: successive leaders share one",
		File:  "quorum/lease.go",
		Old:   "func (l *Lease) Token() int64 { return l.ml.Token() }",
		New:   "func (l *Lease) Token() int64 {\n\tif l.m.elects() {\n\t\treturn l.ml.Token() >> 8\n\t}\n\treturn l.ml.Token()\n}",
		Cells: []CellID{{"redlock-3", "baseline", "election"}},
	},
	{
		Name:  "election-term-decreasing",
		Bug:   "term numbers run downwards: distinct, but a later leader's term is lower",
		File:  "quorum/lease.go",
		Old:   "func (l *Lease) Token() int64 { return l.ml.Token() }",
		New:   "func (l *Lease) Token() int64 {\n\tif l.m.elects() {\n\t\treturn 1<<60 - l.ml.Token()\n\t}\n\treturn l.ml.Token()\n}",
		Cells: []CellID{{"redlock-3", "baseline", "election"}},
	},
	{
		Name:  "election-loss-untold",
		Bug:   "a term's Done channel is not the term's: it never closes, so a leader is not told of a lost term",
		File:  "quorum/lease.go",
		Old:   "func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }",
		New:   "func (l *Lease) Done() <-chan struct{} {\n\tif l.m.elects() {\n\t\treturn make(chan struct{})\n\t}\n\treturn l.Context().Done()\n}",
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
