package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Fault is one thing that goes wrong. Inject makes it happen and returns once
// it is in effect; Recover undoes it (heals) and returns once healed, as far
// as the fault can be undone. String names the fault for logs and reports
// ("partition(m0)").
//
// Faults are plain values: build them with a struct literal
// (&chaos.Partition{Proxy: n.Proxy()}), put them in a list, hand the list
// to a Schedule or a Nemesis. A fault value describes one fault at a time:
// inject it again only after Recover.
type Fault interface {
	Inject(ctx context.Context) error
	Recover(ctx context.Context) error
	String() string
}

// ErrUnsupported says a fault needs a capability that the node's backend
// does not have (e.g. pausing a node given only by its address).
var ErrUnsupported = errors.New("chaos: not supported by this backend")

// Names of the toxics this package adds, so that a person looking at
// toxiproxy-cli sees who put them there.
const (
	toxicPartitionUp   = "chaos_partition_upstream"
	toxicPartitionDown = "chaos_partition_downstream"
	toxicReplyLoss     = "chaos_reply_loss"
	toxicLatencyUp     = "chaos_latency_upstream"
	toxicLatencyDown   = "chaos_latency_downstream"
	toxicBandwidthUp   = "chaos_bandwidth_upstream"
	toxicBandwidthDown = "chaos_bandwidth_downstream"
)

func timeoutToxic(name, stream string) Toxic {
	// timeout 0: swallow the data and keep the connection open forever.
	return Toxic{Name: name, Type: "timeout", Stream: stream, Attributes: map[string]any{"timeout": 0}}
}

// addBoth adds an upstream and a downstream toxic, or neither.
func addBoth(ctx context.Context, p *Proxy, up, down Toxic) error {
	if err := p.AddToxic(ctx, up); err != nil {
		return err
	}
	if err := p.AddToxic(ctx, down); err != nil {
		return errors.Join(err, p.RemoveToxic(context.WithoutCancel(ctx), up.Name))
	}
	return nil
}

// removeAndReset removes toxics (ignoring ones already gone) and then closes
// the proxy's connections, whose streams lost bytes.
func removeAndReset(ctx context.Context, p *Proxy, names ...string) error {
	var errs []error
	have, err := p.Toxics()
	if err != nil {
		return err
	}
	for _, n := range names {
		for _, h := range have {
			if h == n {
				errs = append(errs, p.RemoveToxic(ctx, n))
			}
		}
	}
	errs = append(errs, p.ResetConnections(ctx))
	return errors.Join(errs...)
}

// Partition cuts the network at a proxy: between clients and a node (on the
// node's client proxy, Node.Proxy) or between a node and its replicas and
// sentinels (on its peer proxy, Node.PeerProxy).
//
// Silent (the default) is a black hole: a timeout toxic with timeout 0 on both
// directions, so connections are still accepted but nothing comes back and
// callers see their own deadlines expire. Loud disables the proxy: open
// connections are closed and new ones are refused at once.
//
// Recover removes the toxics and closes the connections that lived through
// the cut (their bytes were swallowed, not delayed as TCP would), or enables
// the proxy again.
type Partition struct {
	Proxy *Proxy
	Loud  bool
}

func (f *Partition) String() string {
	if f.Loud {
		return "partition-loud(" + f.Proxy.Name() + ")"
	}
	return "partition(" + f.Proxy.Name() + ")"
}

// Inject cuts the link.
func (f *Partition) Inject(ctx context.Context) error {
	if f.Loud {
		return f.Proxy.Disable(ctx)
	}
	return addBoth(ctx, f.Proxy, timeoutToxic(toxicPartitionUp, "upstream"), timeoutToxic(toxicPartitionDown, "downstream"))
}

// Recover heals the link.
func (f *Partition) Recover(ctx context.Context) error {
	if f.Loud {
		return f.Proxy.Enable(ctx)
	}
	return removeAndReset(ctx, f.Proxy, toxicPartitionUp, toxicPartitionDown)
}

// ReplyLoss drops everything the node sends back while requests still reach
// it: the node executes a command (SET NX grants the lock) but the client
// never learns it. A timeout toxic on the downstream direction only. A
// connection opened during the fault never gets the reply to its handshake
// (go-redis sends HELLO first), so only connections that were already open
// carry commands through to the node.
type ReplyLoss struct {
	Proxy *Proxy
}

func (f *ReplyLoss) String() string { return "reply-loss(" + f.Proxy.Name() + ")" }

// Inject starts dropping replies.
func (f *ReplyLoss) Inject(ctx context.Context) error {
	return f.Proxy.AddToxic(ctx, timeoutToxic(toxicReplyLoss, "downstream"))
}

// Recover stops dropping replies and resets the broken connections.
func (f *ReplyLoss) Recover(ctx context.Context) error {
	return removeAndReset(ctx, f.Proxy, toxicReplyLoss)
}

// Latency delays every chunk in both directions by Latency ± Jitter (so a
// round trip costs about twice that).
type Latency struct {
	Proxy   *Proxy
	Latency time.Duration
	Jitter  time.Duration
}

func (f *Latency) String() string {
	return fmt.Sprintf("latency(%s,%v±%v)", f.Proxy.Name(), f.Latency, f.Jitter)
}

// Inject adds the delay.
func (f *Latency) Inject(ctx context.Context) error {
	attrs := map[string]any{"latency": f.Latency.Milliseconds(), "jitter": f.Jitter.Milliseconds()}
	return addBoth(ctx, f.Proxy,
		Toxic{Name: toxicLatencyUp, Type: "latency", Stream: "upstream", Attributes: attrs},
		Toxic{Name: toxicLatencyDown, Type: "latency", Stream: "downstream", Attributes: attrs})
}

// Recover removes the delay; data already delayed is still delivered.
func (f *Latency) Recover(ctx context.Context) error {
	return errors.Join(f.Proxy.RemoveToxic(ctx, toxicLatencyUp), f.Proxy.RemoveToxic(ctx, toxicLatencyDown))
}

// Bandwidth limits both directions to KBps kilobytes per second.
// (toxiproxy's bandwidth toxic logs at trace level to zerolog's global
// logger; zerolog.SetGlobalLevel(zerolog.InfoLevel) quiets it.)
type Bandwidth struct {
	Proxy *Proxy
	KBps  int64
}

func (f *Bandwidth) String() string {
	return fmt.Sprintf("bandwidth(%s,%dKB/s)", f.Proxy.Name(), f.KBps)
}

// Inject adds the limit.
func (f *Bandwidth) Inject(ctx context.Context) error {
	if f.KBps <= 0 {
		return fmt.Errorf("chaos: bandwidth limit must be positive, got %d KB/s", f.KBps)
	}
	attrs := map[string]any{"rate": f.KBps}
	return addBoth(ctx, f.Proxy,
		Toxic{Name: toxicBandwidthUp, Type: "bandwidth", Stream: "upstream", Attributes: attrs},
		Toxic{Name: toxicBandwidthDown, Type: "bandwidth", Stream: "downstream", Attributes: attrs})
}

// Recover removes the limit.
func (f *Bandwidth) Recover(ctx context.Context) error {
	return errors.Join(f.Proxy.RemoveToxic(ctx, toxicBandwidthUp), f.Proxy.RemoveToxic(ctx, toxicBandwidthDown))
}

// Pause freezes a node's process (SIGSTOP, or a container pause): its
// connections stay open and nothing answers. Recover continues it; commands
// that clients queued on its sockets meanwhile run then, so lock keys from
// attempts that already timed out can appear after the fact.
type Pause struct {
	Node *Node
}

func (f *Pause) String() string { return "pause(" + f.Node.Name() + ")" }

// Inject freezes the node.
func (f *Pause) Inject(ctx context.Context) error {
	p, err := f.Node.process()
	if err != nil {
		return err
	}
	return p.Pause(ctx)
}

// Recover continues the node.
func (f *Pause) Recover(ctx context.Context) error {
	p, err := f.Node.process()
	if err != nil {
		return err
	}
	return p.Resume(ctx)
}

// Crash kills a node's process with SIGKILL. What survives is decided by the
// node's persistence (Topology.Persistence): nothing without, everything
// acknowledged with AOF and appendfsync always. PowerLoss also removes the
// data files, as a machine losing its page cache would (kill -9 alone keeps
// AOF data the kernel has not written yet).
//
// With Restart the node comes back at once inside Inject (the fault is the
// lost state and the new run id); otherwise it stays down until Recover, so a
// schedule's hold time is the "delayed restart" of the RedLock paper. A
// restarted group node comes back in the role it had when it died.
type Crash struct {
	Node      *Node
	PowerLoss bool
	Restart   bool
}

func (f *Crash) String() string {
	kind := "crash"
	if f.PowerLoss {
		kind = "power-loss"
	}
	if f.Restart {
		kind += "+restart"
	}
	return kind + "(" + f.Node.Name() + ")"
}

// Inject kills the node (and wipes and restarts it if asked).
func (f *Crash) Inject(ctx context.Context) error {
	p, err := f.Node.process()
	if err != nil {
		return err
	}
	if err := p.Kill(ctx); err != nil {
		return err
	}
	if f.PowerLoss {
		if err := p.WipeData(ctx); err != nil {
			return err
		}
	}
	if f.Restart {
		return f.Node.restart(ctx)
	}
	return nil
}

// Recover restarts the node if it is down: always when Inject left it down,
// and, with Restart, when the restart inside Inject failed (if the backend
// can tell whether the process runs).
func (f *Crash) Recover(ctx context.Context) error {
	p, err := f.Node.process()
	if err != nil {
		return err
	}
	if r, ok := p.(interface{ Running() bool }); ok && r.Running() {
		return nil
	} else if !ok && f.Restart {
		return nil
	}
	return f.Node.restart(ctx)
}

// NodeFaults returns the usual faults for one node, as a nemesis would
// draw from: silent and loud partitions, reply loss, latency with jitter,
// then — when the node's process can be controlled — pause, crash with a
// delayed restart, crash with an immediate restart, and power loss; and a
// clock running twice as fast when the node is local and libfaketime works.
func NodeFaults(n *Node) []Fault {
	fs := []Fault{
		&Partition{Proxy: n.Proxy()},
		&Partition{Proxy: n.Proxy(), Loud: true},
		&ReplyLoss{Proxy: n.Proxy()},
		&Latency{Proxy: n.Proxy(), Latency: 50 * time.Millisecond, Jitter: 25 * time.Millisecond},
	}
	if _, err := n.process(); err == nil {
		fs = append(fs,
			&Pause{Node: n},
			&Crash{Node: n},
			&Crash{Node: n, Restart: true},
		)
		if n.Server() != nil {
			fs = append(fs, &Crash{Node: n, PowerLoss: true, Restart: true})
			if ClockSupported() == nil {
				fs = append(fs, &ClockSkew{Node: n, Rate: 2})
			}
		}
	}
	return fs
}
