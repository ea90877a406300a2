package quorum

// lockKind is what a kind of lock asks of each node, and how its waiters
// are woken. A Mutex is a set of names, their keys and one kind; the read
// and write sides of an RWMutex and an Election are Mutexes of other kinds,
// and a FairMutex attempt is a kind of its own (fairAttempt), made per
// attempt because it carries the waiter's place in line.
type lockKind interface {
	// share is node i's share of name j in one attempt of m. held: the
	// lock is probably held, so a plain lock skips its SET NX.
	share(m *Mutex, i, j int, owner, attempt string, held bool) checkedLocker
	// fenced reports whether the lock is fenced whatever the client's
	// WithFencing says.
	fenced() bool
	// wakesAll reports whether one unlock message wakes every waiter of
	// the kind on a client (readers share the lock) rather than one.
	wakesAll() bool
	// exclusive reports whether a lease of the handle holding the lock
	// means an unlock message heard by the handle's waiter is a late copy
	// of the release that lease's Lock followed (Mutex.holding).
	exclusive() bool
}

// plainLock is a Mutex's: one holder, a token when the client fences.
type plainLock struct{}

func (plainLock) share(m *Mutex, i, j int, owner, attempt string, held bool) checkedLocker {
	c := m.c
	nl := c.nodes[i].LockKeys(m.keys[j][i], owner, attempt, c.cfg.fencing)
	if held {
		nl.ExpectHeld()
	}
	return nl
}

func (plainLock) fenced() bool    { return false }
func (plainLock) wakesAll() bool  { return false }
func (plainLock) exclusive() bool { return true }

// electLock is an Election's: always fenced (its token is the term), and
// its node shares carry the leader's value.
type electLock struct{}

func (electLock) share(m *Mutex, i, j int, owner, attempt string, held bool) checkedLocker {
	nl := m.c.nodes[i].LockKeys(m.keys[j][i], owner, attempt, true)
	if held {
		nl.ExpectHeld()
	}
	nl.Elect()
	return nl
}

// elects reports whether m is an election's lock, whose leases are terms.
func (m *Mutex) elects() bool {
	_, ok := m.kind.(electLock)
	return ok
}

func (electLock) fenced() bool    { return true }
func (electLock) wakesAll() bool  { return false }
func (electLock) exclusive() bool { return false }

// rwShare is a side of an RWMutex: readers share the lock, a writer holds
// it alone.
type rwShare struct{ write bool }

func (s rwShare) share(m *Mutex, i, j int, owner, attempt string, _ bool) checkedLocker {
	return m.c.nodes[i].RWLock(m.names[j], owner, attempt, s.write, m.c.cfg.fencing)
}

func (rwShare) fenced() bool            { return false }
func (s rwShare) wakesAll() bool        { return !s.write }
func (rwShare) exclusive() bool         { return false }
func (fa *fairAttempt) fenced() bool    { return false }
func (fa *fairAttempt) wakesAll() bool  { return false }
func (fa *fairAttempt) exclusive() bool { return false }

// share is node i's fair lock in this attempt, kept in fa.fls to read
// where the waiter's entry is once the attempt ends.
func (fa *fairAttempt) share(m *Mutex, i, j int, owner, attempt string, _ bool) checkedLocker {
	fl := m.c.nodes[i].FairLock(m.names[j], owner, attempt, fa.waiter(), fa.mode(i), m.c.cfg.fencing)
	fa.fls[i] = fl
	return fl
}
