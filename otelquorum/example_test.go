package otelquorum_test

import (
	"context"
	"fmt"
	"log"
	"sort"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/quorumlock/quorumlock/localredis"
	"github.com/quorumlock/quorumlock/otelquorum"
	"github.com/quorumlock/quorumlock/quorum"
)

// Install the observer on a quorum client. Here the meter and tracer
// providers read into memory so the example can print what was recorded;
// a service passes its own (or none: New uses the global providers).
func ExampleNew() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer mp.Shutdown(ctx)
	defer tp.Shutdown(ctx)

	obs, err := otelquorum.New(otelquorum.WithMeterProvider(mp), otelquorum.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}

	servers, err := localredis.StartN(ctx, 3, localredis.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer localredis.StopAll(servers)
	nodes := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		nodes[i] = s.Client()
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()

	client, err := quorum.New(nodes, quorum.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := client.Mutex("report")
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_ = lease.Unlock(ctx)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			names = append(names, mt.Name)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println("metric", n)
	}
	for _, s := range spans.GetSpans() {
		fmt.Println("span", s.Name)
	}
	// Output:
	// metric quorumlock.acquire.attempts
	// metric quorumlock.acquire.duration
	// metric quorumlock.hold.duration
	// metric quorumlock.leases.held
	// metric quorumlock.node.rtt
	// metric quorumlock.node.votes
	// span quorumlock.attempt
	// span quorumlock.acquire
	// span quorumlock.hold
}
