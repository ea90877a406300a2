package otelquorum_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/testutil"
	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/otelquorum"
	"github.com/quorumlock/quorumlock/quorum"
	"github.com/quorumlock/quorumlock/quorum/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// telemetry is an in-memory metrics reader and span exporter.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	obs    *otelquorum.Observer
}

func newTelemetry(t *testing.T, opts ...otelquorum.Option) *telemetry {
	t.Helper()
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tel.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tel.tp.Shutdown(context.Background())
	})
	obs, err := otelquorum.New(append([]otelquorum.Option{otelquorum.WithMeterProvider(mp), otelquorum.WithTracerProvider(tel.tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tel.obs = obs
	return tel
}

func (tel *telemetry) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelquorum.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sum adds the data points of a counter whose attributes include every
// given pair.
func sum(t *testing.T, data map[string]metricdata.Aggregation, name string, where ...attribute.KeyValue) int64 {
	t.Helper()
	s, ok := data[name].(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: no int64 sum (%T)", name, data[name])
	}
	var n int64
	for _, dp := range s.DataPoints {
		if has(dp.Attributes, where) {
			n += dp.Value
		}
	}
	return n
}

// count adds the counts of a histogram's data points that match.
func count(t *testing.T, data map[string]metricdata.Aggregation, name string, where ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := data[name].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: no float64 histogram (%T)", name, data[name])
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if has(dp.Attributes, where) {
			n += dp.Count
		}
	}
	return n
}

func has(set attribute.Set, where []attribute.KeyValue) bool {
	for _, kv := range where {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func nodes(t *testing.T, n int) []redis.UniversalClient {
	t.Helper()
	_, clients := testutil.Servers(t, n, localredis.Config{})
	return clients
}

// A contended run: three workers take one lock four times each while
// holding it for a moment; one lease is then lost. The metrics count every
// attempt (some contended), every acquisition and hold, every node's votes
// and the lost lease; the spans are children of the caller's span.
func TestContendedRunMetricsAndSpans(t *testing.T) {
	tel := newTelemetry(t)
	clients := nodes(t, 3)
	c, err := quorum.New(clients, quorum.WithTTL(600*time.Millisecond), quorum.WithObserver(tel.obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex("orders")
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tel.tp.Tracer("test").Start(t.Context(), "worker-run")
	const workers, rounds = 3, 4
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(20 * time.Millisecond)
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// One lease is lost: the lock is removed under it and its next renewal
	// finds a quorum saying it is not held.
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().ForceUnlock(ctx, "orders", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not lost after a force-unlock")
	}
	if err := l.Unlock(ctx); !errors.Is(err, quorum.ErrLeaseLost) {
		t.Fatalf("Unlock: %v", err)
	}
	root.End()

	const acquired = workers*rounds + 1
	data := tel.collect(t)
	ok := otelquorum.KeyOutcome.String(observe.OutcomeOK)
	okAttempts := sum(t, data, "quorumlock.acquire.attempts", ok)
	contended := sum(t, data, "quorumlock.acquire.attempts", otelquorum.KeyOutcome.String(observe.OutcomeContended))
	t.Logf("attempts: %d ok, %d contended", okAttempts, contended)
	if okAttempts != acquired {
		t.Errorf("%d successful attempts counted, want %d", okAttempts, acquired)
	}
	if contended == 0 {
		t.Error("no contended attempt counted in a contended run")
	}
	if n := count(t, data, "quorumlock.acquire.duration", ok); n != acquired {
		t.Errorf("acquire.duration has %d ok observations, want %d", n, acquired)
	}
	if n := count(t, data, "quorumlock.hold.duration", ok); n != workers*rounds {
		t.Errorf("hold.duration has %d ok observations, want %d", n, workers*rounds)
	}
	if n := count(t, data, "quorumlock.hold.duration", otelquorum.KeyOutcome.String(observe.OutcomeLost)); n != 1 {
		t.Errorf("hold.duration has %d lost observations, want 1", n)
	}
	if n := sum(t, data, "quorumlock.lease.lost", otelquorum.KeyOutcome.String(observe.OutcomeLost)); n != 1 {
		t.Errorf("lease.lost = %d, want 1", n)
	}
	if n := sum(t, data, "quorumlock.lease.renewals", otelquorum.KeyOutcome.String(observe.OutcomeLost), otelquorum.KeyWatchdog.Bool(true)); n != 1 {
		t.Errorf("%d watchdog renewals reported lost, want 1", n)
	}
	if n := sum(t, data, "quorumlock.leases.held"); n != 0 {
		t.Errorf("leases.held = %d after every lease was unlocked", n)
	}
	for _, cl := range clients {
		addr := cl.(*redis.Client).Options().Addr
		node := otelquorum.KeyNode.String(addr)
		g := sum(t, data, "quorumlock.node.votes", node, otelquorum.KeyVote.String(otelquorum.VoteGranted))
		r := sum(t, data, "quorumlock.node.votes", node, otelquorum.KeyVote.String(otelquorum.VoteRefused))
		t.Logf("node %s: %d granted, %d refused", addr, g, r)
		if g+r == 0 {
			t.Errorf("no votes counted for node %s", addr)
		}
		if count(t, data, "quorumlock.node.rtt", node) == 0 {
			t.Errorf("no answer time recorded for node %s", addr)
		}
	}
	// Lock names are not metric attributes by default.
	if s := data["quorumlock.acquire.attempts"].(metricdata.Sum[int64]); len(s.DataPoints) > 0 {
		if _, found := s.DataPoints[0].Attributes.Value(otelquorum.KeyLock); found {
			t.Error("lock name on a metric without WithLockNames")
		}
	}

	byName := map[string][]tracetest.SpanStub{}
	var rootID string
	for _, s := range tel.spans.GetSpans() {
		byName[s.Name] = append(byName[s.Name], s)
		if s.Name == "worker-run" {
			rootID = s.SpanContext.SpanID().String()
		}
	}
	if n := len(byName["quorumlock.acquire"]); n != acquired {
		t.Errorf("%d acquire spans, want %d", n, acquired)
	}
	if n := len(byName["quorumlock.hold"]); n != acquired {
		t.Errorf("%d hold spans, want %d", n, acquired)
	}
	if n := len(byName["quorumlock.attempt"]); int64(n) != okAttempts+contended+sum(t, data, "quorumlock.acquire.attempts", otelquorum.KeyOutcome.String(observe.OutcomeFailed)) {
		t.Errorf("%d attempt spans, not one per counted attempt", n)
	}
	if n := len(byName["quorumlock.lost"]); n != 1 {
		t.Errorf("%d lost spans, want 1", n)
	}
	for _, name := range []string{"quorumlock.acquire", "quorumlock.attempt", "quorumlock.hold"} {
		for _, s := range byName[name] {
			if s.Parent.SpanID().String() != rootID {
				t.Fatalf("%s span is not a child of the caller's span", name)
			}
			if !s.EndTime.After(s.StartTime) && name != "quorumlock.attempt" {
				t.Fatalf("%s span ends at %v, starts at %v", name, s.EndTime, s.StartTime)
			}
		}
	}
	a := byName["quorumlock.attempt"][0]
	if len(a.Events) != 3 || a.Events[0].Name != "vote" {
		t.Errorf("attempt span events: %+v, want a vote per node", a.Events)
	}
	lostHolds := 0
	for _, s := range byName["quorumlock.hold"] {
		if s.Status.Code == codes.Error {
			lostHolds++
		}
		if s.EndTime.Sub(s.StartTime) < 20*time.Millisecond {
			t.Errorf("hold span of %v; every holder slept 20ms", s.EndTime.Sub(s.StartTime))
		}
	}
	if lostHolds != 1 {
		t.Errorf("%d hold spans with status Error, want the lost one", lostHolds)
	}
}

// WithLockNames puts the lock name on metrics.
func TestWithLockNames(t *testing.T) {
	tel := newTelemetry(t, otelquorum.WithLockNames())
	c, err := quorum.New(nodes(t, 1), quorum.WithObserver(tel.obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m, _ := c.Mutex("invoice-7")
	l, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(t.Context())
	data := tel.collect(t)
	if n := sum(t, data, "quorumlock.acquire.attempts", otelquorum.KeyLock.String("invoice-7")); n != 1 {
		t.Fatalf("attempts with the lock name: %d, want 1", n)
	}
}

func TestVoteOf(t *testing.T) {
	for _, tt := range []struct {
		v    observe.Vote
		want string
	}{
		{observe.Vote{Granted: true, Answered: true}, otelquorum.VoteGranted},
		{observe.Vote{Answered: true}, otelquorum.VoteRefused},
		{observe.Vote{Answered: true, Err: errors.New("x")}, otelquorum.VoteError},
		{observe.Vote{}, otelquorum.VoteNoAnswer},
	} {
		if got := otelquorum.VoteOf(tt.v); got != tt.want {
			t.Errorf("VoteOf(%+v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}
