package sim

import (
	"cmp"
	"slices"
	"sync"
	"testing/synctest"
	"time"
)

// deadlines wakes clients' reads whose deadline has come one at a time,
// in (deadline, connection) order, each after every other goroutine of
// the bubble has settled. A timer per read would wake the readers of one
// instant together, and the one the scheduler runs first (say, the first
// of a fan-out's node calls to time out, which decides the attempt)
// would be the runtime's pick, not the seed's: the calls of an attempt
// share its deadline, so they time out at one instant as a rule.
type deadlines struct {
	mu   sync.Mutex
	q    []*wakeup
	kick chan struct{} // a wake-up was added
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

// wakeup is one blocked read's deadline: ch is closed when it has come.
type wakeup struct {
	at  time.Time
	seq uint64
	ch  chan struct{}
}

// newDeadlines starts the goroutine that wakes reads. It must run in the
// run's synctest bubble (it calls synctest.Wait), and close must stop it
// before the bubble ends.
func newDeadlines() *deadlines {
	d := &deadlines{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *deadlines) close() {
	close(d.stop)
	<-d.done
}

// add registers a read of the connection end seq blocked until at.
func (d *deadlines) add(at time.Time, seq uint64) *wakeup {
	w := &wakeup{at: at, seq: seq, ch: make(chan struct{})}
	d.mu.Lock()
	d.q = append(d.q, w)
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return w
}

// remove forgets w (its read ended before its deadline).
func (d *deadlines) remove(w *wakeup) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.q, w); i >= 0 {
		d.q = slices.Delete(d.q, i, i+1)
	}
}

func (d *deadlines) run() {
	defer close(d.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		d.mu.Lock()
		var next time.Time
		for _, w := range d.q {
			if next.IsZero() || w.at.Before(next) {
				next = w.at
			}
		}
		d.mu.Unlock()
		if !next.IsZero() {
			t.Reset(time.Until(next))
		}
		select {
		case <-d.stop:
			t.Stop()
			return
		case <-d.kick:
			t.Stop()
			continue
		case <-t.C:
		}
		// Everything else this instant does first (deliveries, the
		// contexts' own timers), then each read alone.
		synctest.Wait()
		now := time.Now()
		d.mu.Lock()
		var due []*wakeup
		d.q = slices.DeleteFunc(d.q, func(w *wakeup) bool {
			if w.at.After(now) {
				return false
			}
			due = append(due, w)
			return true
		})
		d.mu.Unlock()
		slices.SortFunc(due, func(a, b *wakeup) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq)) })
		for _, w := range due {
			close(w.ch)
			synctest.Wait()
		}
	}
}
