package sim

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// Links are never instant: every link has a base delay within bounds and
// a jitter of up to half of it, the same for a seed and link whatever the
// order links are used in, different for another seed; a round trip
// takes at least twice the base delay (virtual time: exact).
func TestBaseDelay(t *testing.T) {
	a, b := NewNet(7), NewNet(7)
	l1 := a.BaseLink("w0", "n1")
	_ = b.BaseLink("w3", "n0")
	if got := b.BaseLink("w0", "n1"); got != l1 {
		t.Errorf("seed 7, w0→n1: %+v then %+v", l1, got)
	}
	differ := 0
	for i, c := range []string{"w0", "w1", "w2", "w3", "w4"} {
		l := a.BaseLink(c, "n0")
		if l.Delay < BaseDelayMin || l.Delay > BaseDelayMax || l.Jitter > l.Delay/2 {
			t.Errorf("%s→n0: %+v out of bounds", c, l)
		}
		if NewNet(uint64(100+i)).BaseLink(c, "n0") != l {
			differ++
		}
	}
	if differ == 0 {
		t.Error("another seed gave every link the same base delay")
	}

	synctest.Test(t, func(t *testing.T) {
		nw := NewNet(3)
		nd := NewNode(nw, "n0")
		defer nd.Close()
		cl := redis.NewClient(ClientOptions(nw, "w0", "n0"))
		defer cl.Close()
		if err := cl.Ping(t.Context()).Err(); err != nil { // dial and handshake
			t.Fatal(err)
		}
		base := nw.BaseLink("w0", "n0")
		start := time.Now()
		if err := cl.Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(start); rtt < 2*base.Delay || rtt > 2*(base.Delay+base.Jitter) {
			t.Errorf("round trip %v, want within 2×(%v … %v)", rtt, base.Delay, base.Delay+base.Jitter)
		}
		nw.SetBaseDelay(0, 0)
		if l := nw.BaseLink("w0", "n0"); l != (Link{}) {
			t.Errorf("SetBaseDelay(0, 0): %+v", l)
		}
	})
}

// A link that drops unlock messages loses pub/sub messages and keeps the
// connection: the next message after the fault arrives; a delayed one
// arrives late.
func TestDropUnlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNet(5)
		nd := NewNode(nw, "n0")
		defer nd.Close()
		sub := redis.NewClient(ClientOptions(nw, "w0", "n0"))
		defer sub.Close()
		pub := redis.NewClient(ClientOptions(nw, "w1", "n0"))
		defer pub.Close()
		ps := sub.Subscribe(t.Context(), "ch")
		defer ps.Close()
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatal(err)
		}
		ch := ps.Channel()
		nw.SetLink("w0", "n0", Link{DropUnlocks: true})
		if err := pub.Publish(t.Context(), "ch", "lost").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		select {
		case m := <-ch:
			t.Fatalf("dropped message arrived: %v", m)
		default:
		}
		nw.SetLink("w0", "n0", Link{UnlockDelay: 300 * time.Millisecond})
		start := time.Now()
		if err := pub.Publish(t.Context(), "ch", "late").Err(); err != nil {
			t.Fatal(err)
		}
		m := <-ch
		if m.Payload != "late" || time.Since(start) < 300*time.Millisecond {
			t.Fatalf("got %q after %v", m.Payload, time.Since(start))
		}
	})
}

// A resubscription's channels reach the node in one order whatever order
// go-redis (a map) wrote them in; every other write passes unchanged.
func TestSortedSubscribe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"*3\r\n$9\r\nsubscribe\r\n$3\r\nzzz\r\n$2\r\naa\r\n", "*3\r\n$9\r\nsubscribe\r\n$2\r\naa\r\n$3\r\nzzz\r\n"},
		{"*4\r\n$10\r\npsubscribe\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n", "*4\r\n$10\r\npsubscribe\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"},
		{"*3\r\n$9\r\nsubscribe\r\n$2\r\naa\r\n$3\r\nzzz\r\n", ""},
		// Not one subscribe of several: a pipeline, another command, a
		// torn write, one channel.
		{"*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n$1\r\na\r\n*1\r\n$4\r\nping\r\n", ""},
		{"*3\r\n$5\r\nmget\r\n$1\r\nb\r\n$1\r\na\r\n", ""},
		{"*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n$1\r\na", ""},
		{"*2\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n", ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(sortedSubscribe([]byte(c.in))); got != want {
			t.Errorf("sortedSubscribe(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// A pipeline's jitter draw and trace entry do not depend on the order of
// its commands (the scheduler's order of the calls a batch collected);
// they do depend on what the commands are, and a write that is not whole
// commands is hashed as it is.
func TestMsgKeyIgnoresPipelineOrder(t *testing.T) {
	const (
		a = "*2\r\n$3\r\nget\r\n$1\r\na\r\n"
		b = "*3\r\n$3\r\nset\r\n$1\r\nb\r\n$2\r\nxy\r\n"
		c = "*1\r\n$4\r\nping\r\n"
	)
	key := func(s string) uint64 { return msgKey(fnvOffset, []byte(s)) }
	if key(a+b+c) != key(c+a+b) || key(a+b) != key(b+a) {
		t.Errorf("a pipeline's key depends on its order")
	}
	for _, other := range []string{a + a, a + c, b + c, a + b + c + c, a + b + "*1\r\n$4\r\nping"} {
		if key(a+b+c) == key(other) {
			t.Errorf("%q and %q share a key", a+b+c, other)
		}
	}
	for _, one := range []string{a, ":1\r\n", a + "$1", "*2\r\n$3\r\nget\r\n$9\r\na\r\n"} {
		if key(one) != fnvBytes(fnvOffset, []byte(one)) {
			t.Errorf("%q is not hashed whole", one)
		}
	}
	if got, want := commandsText([]byte(b+a)), fmt.Sprintf("%q %q", a, b); got != want {
		t.Errorf("commandsText = %s, want %s", got, want)
	}
}
