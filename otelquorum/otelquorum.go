package otelquorum

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/quorumlock/quorumlock/quorum/observe"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/quorumlock/quorumlock/otelquorum"

// Attribute keys.
const (
	KeyLock     = attribute.Key("quorumlock.lock")
	KeyOutcome  = attribute.Key("quorumlock.outcome")
	KeyNode     = attribute.Key("quorumlock.node")
	KeyVote     = attribute.Key("quorumlock.vote")
	KeyWatchdog = attribute.Key("quorumlock.watchdog")
	KeyToken    = attribute.Key("quorumlock.token")
	KeyGranted  = attribute.Key("quorumlock.granted")
	KeyNodes    = attribute.Key("quorumlock.nodes")
	KeyRTT      = attribute.Key("quorumlock.rtt_ms")
)

// Votes as the quorumlock.vote attribute says them.
const (
	VoteGranted  = "granted"
	VoteRefused  = "refused"
	VoteError    = "error"
	VoteNoAnswer = "no_answer"
)

type config struct {
	mp        metric.MeterProvider
	tp        trace.TracerProvider
	lockNames bool
}

// Option configures an Observer.
type Option func(*config)

// WithMeterProvider sets where metrics go. Default otel.GetMeterProvider()
// at New.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets where spans go. Default otel.GetTracerProvider()
// at New.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithLockNames adds the lock's name (quorumlock.lock) to every metric.
// Default off: each distinct name becomes its own time series, so turn it on
// only when the set of names is small and fixed.
func WithLockNames() Option { return func(c *config) { c.lockNames = true } }

// Observer records observe.Events as metrics and spans. It implements
// observe.Observer and is safe for concurrent use.
type Observer struct {
	cfg    config
	tracer trace.Tracer

	attempts metric.Int64Counter
	acquire  metric.Float64Histogram
	hold     metric.Float64Histogram
	renewals metric.Int64Counter
	lost     metric.Int64Counter
	held     metric.Int64UpDownCounter
	votes    metric.Int64Counter
	nodeRTT  metric.Float64Histogram
}

var _ observe.Observer = (*Observer)(nil)

// Buckets for lock latencies, in seconds: 100 µs to 60 s.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// New makes the instruments. Pass the result to quorum.WithObserver.
func New(opts ...Option) (*Observer, error) {
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	meter := cfg.mp.Meter(ScopeName)
	o := &Observer{cfg: cfg, tracer: cfg.tp.Tracer(ScopeName)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	o.attempts = counter("quorumlock.acquire.attempts", "{attempt}", "Acquisition attempts on the nodes, by outcome.")
	o.acquire = histogram("quorumlock.acquire.duration", "Time a Lock or TryLock took, waiting included, by outcome.")
	o.hold = histogram("quorumlock.hold.duration", "Time from obtaining a lease to Unlock, by outcome.")
	o.renewals = counter("quorumlock.lease.renewals", "{renewal}", "Lease renewals, by outcome and whether the watchdog made them.")
	o.lost = counter("quorumlock.lease.lost", "{lease}", "Leases that ended without Unlock: lost (not renewed on a quorum) or expired.")
	o.votes = counter("quorumlock.node.votes", "{vote}", "Per-node answers to acquisition attempts, by node and vote.")
	o.nodeRTT = histogram("quorumlock.node.rtt", "Time each node took to answer an acquisition attempt, by node.")
	var err error
	o.held, err = meter.Int64UpDownCounter("quorumlock.leases.held", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases handed out and not yet unlocked."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// attrs returns the metric attributes of e: the outcome, and the lock's
// name when WithLockNames is on.
func (o *Observer) attrs(e observe.Event, more ...attribute.KeyValue) metric.MeasurementOption {
	kv := make([]attribute.KeyValue, 0, 2+len(more))
	kv = append(kv, KeyOutcome.String(e.Outcome))
	if o.cfg.lockNames {
		kv = append(kv, KeyLock.String(e.Name))
	}
	kv = append(kv, more...)
	return metric.WithAttributes(kv...)
}

// Observe records one event.
func (o *Observer) Observe(ctx context.Context, e observe.Event) {
	switch e.Op {
	case observe.OpAttempt:
		o.attempt(ctx, e)
	case observe.OpAcquire:
		o.acquire.Record(ctx, e.Duration.Seconds(), o.attrs(e))
		if e.Outcome == observe.OutcomeOK {
			o.held.Add(ctx, 1)
		}
		o.span(ctx, "quorumlock.acquire", e, e.Start, e.Outcome == observe.OutcomeFailed)
	case observe.OpExtend:
		o.renewals.Add(ctx, 1, o.attrs(e, KeyWatchdog.Bool(e.Watchdog)))
		if !e.Watchdog || e.Outcome != observe.OutcomeOK {
			o.span(ctx, "quorumlock.extend", e, e.Start, e.Outcome != observe.OutcomeOK, KeyWatchdog.Bool(e.Watchdog))
		}
	case observe.OpRelease:
		o.hold.Record(ctx, (e.Held + e.Duration).Seconds(), o.attrs(e))
		o.held.Add(ctx, -1)
		o.span(ctx, "quorumlock.hold", e, e.Start.Add(-e.Held), e.Outcome != observe.OutcomeOK)
	case observe.OpLost:
		o.lost.Add(ctx, 1, o.attrs(e))
		o.span(ctx, "quorumlock.lost", e, e.Start, e.Outcome == observe.OutcomeLost)
	}
}

func (o *Observer) attempt(ctx context.Context, e observe.Event) {
	o.attempts.Add(ctx, 1, o.attrs(e))
	granted := 0
	for _, v := range e.Votes {
		vote := VoteOf(v)
		if vote == VoteGranted {
			granted++
		}
		o.votes.Add(ctx, 1, metric.WithAttributes(KeyNode.String(v.Node), KeyVote.String(vote)))
		if v.Answered {
			o.nodeRTT.Record(ctx, v.RTT.Seconds(), metric.WithAttributes(KeyNode.String(v.Node)))
		}
	}
	_, span := o.tracer.Start(ctx, "quorumlock.attempt", trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(KeyLock.String(e.Name), KeyOutcome.String(e.Outcome), KeyGranted.Int(granted), KeyNodes.Int(len(e.Votes))))
	if span.IsRecording() {
		for _, v := range e.Votes {
			kv := []attribute.KeyValue{KeyNode.String(v.Node), KeyVote.String(VoteOf(v))}
			if v.Answered {
				kv = append(kv, KeyRTT.Float64(float64(v.RTT)/float64(time.Millisecond)))
			}
			if v.Err != nil {
				kv = append(kv, attribute.String("error", v.Err.Error()))
			}
			span.AddEvent("vote", trace.WithAttributes(kv...), trace.WithTimestamp(e.Start))
		}
	}
	end(span, e, e.Outcome == observe.OutcomeFailed)
}

// span makes the span of a finished operation.
func (o *Observer) span(ctx context.Context, name string, e observe.Event, start time.Time, failed bool, more ...attribute.KeyValue) {
	kv := append([]attribute.KeyValue{KeyLock.String(e.Name), KeyOutcome.String(e.Outcome)}, more...)
	if e.Token != 0 {
		kv = append(kv, KeyToken.Int64(e.Token))
	}
	_, span := o.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(kv...))
	end(span, e, failed)
}

func end(span trace.Span, e observe.Event, failed bool) {
	if failed && e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Outcome)
	}
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

// VoteOf names a node's answer: granted, refused (held by another owner),
// error, or no_answer (none before the decision).
func VoteOf(v observe.Vote) string {
	switch {
	case v.Granted:
		return VoteGranted
	case !v.Answered:
		return VoteNoAnswer
	case v.Err != nil:
		return VoteError
	}
	return VoteRefused
}
