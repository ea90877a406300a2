package sim

import (
	"cmp"
	"slices"
	"sync"
	"testing/synctest"
	"time"
)

// instants runs the network's events of one virtual instant one at a
// time, in a fixed order: first everything else the instant wakes (the
// contexts' timers, sleeps) settles, then the commands a resumed node
// held run in the order they arrived, then each connection end's due
// messages are delivered, then each read whose deadline has come is woken,
// by connection, each after the one before has settled (synctest.Wait).
// A timer per delivery or per read would wake the goroutines of one
// instant together, and the one the scheduler runs first would be the
// runtime's pick, not the seed's: a fan-out's node calls share their
// attempt's deadline and time out at one instant as a rule (which of
// them timed out first decided the attempt), and messages from two
// connections that reach a node at one instant (a publish, a
// subscriber's unsubscribe), or that a paused node held, are answered in
// the order its connections' goroutines run.
type instants struct {
	mu   sync.Mutex
	q    []*event
	held uint64        // commands released so far (their order)
	next time.Time     // when run's timer fires (zero: not set)
	kick chan struct{} // an event earlier than next was added
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

// event is a delivery (fn) or a blocked read's deadline (ch, closed when
// it has come), at a connection end (seq).
type event struct {
	at    time.Time
	class int // deliveries before deadlines
	seq   uint64
	fn    func()
	ch    chan struct{}
}

const (
	classHeld = iota // commands a paused node held, resumed
	classDelivery
	classDeadline
)

// newInstants starts the goroutine that runs the events. It must run in
// the run's synctest bubble (it calls synctest.Wait), and close must stop
// it before the bubble ends.
func newInstants() *instants {
	d := &instants{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *instants) close() {
	close(d.stop)
	<-d.done
}

// deliverAt runs fn (a connection end's delivery) at at.
func (d *instants) deliverAt(at time.Time, seq uint64, fn func()) {
	d.add(&event{at: at, class: classDelivery, seq: seq, fn: fn})
}

// release lets the commands a paused node held (each waiting on its
// channel, in arrival order) run one at a time, from now.
func (d *instants) release(held []chan struct{}) {
	now := time.Now()
	for _, ch := range held {
		d.mu.Lock()
		d.held++
		seq := d.held
		d.mu.Unlock()
		d.add(&event{at: now, class: classHeld, seq: seq, fn: func() { close(ch) }})
	}
}

// deadline registers a read of connection end seq blocked until at: the
// returned event's ch is closed when at has come.
func (d *instants) deadline(at time.Time, seq uint64) *event {
	e := &event{at: at, class: classDeadline, seq: seq, ch: make(chan struct{})}
	d.add(e)
	return e
}

func (d *instants) add(e *event) {
	d.mu.Lock()
	d.q = append(d.q, e)
	early := d.next.IsZero() || e.at.Before(d.next)
	d.mu.Unlock()
	if early {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

// remove forgets e (its read ended before its deadline).
func (d *instants) remove(e *event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.q, e); i >= 0 {
		d.q = slices.Delete(d.q, i, i+1)
	}
}

func (d *instants) run() {
	defer close(d.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		d.mu.Lock()
		var next time.Time
		for _, e := range d.q {
			if next.IsZero() || e.at.Before(next) {
				next = e.at
			}
		}
		d.next = next
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
		synctest.Wait()
		// Events due now may add more due now (a delivery that wakes a
		// read whose deadline is now): run until none is left.
		for {
			due := d.due(time.Now())
			if len(due) == 0 {
				break
			}
			for _, e := range due {
				if e.fn != nil {
					e.fn()
				} else {
					close(e.ch)
				}
				synctest.Wait()
			}
		}
	}
}

// due removes and returns the events due at now, in order.
func (d *instants) due(now time.Time) []*event {
	d.mu.Lock()
	var due []*event
	d.q = slices.DeleteFunc(d.q, func(e *event) bool {
		if e.at.After(now) {
			return false
		}
		due = append(due, e)
		return true
	})
	d.mu.Unlock()
	slices.SortFunc(due, func(a, b *event) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.class, b.class), cmp.Compare(a.seq, b.seq))
	})
	return due
}
