package quorum

import (
	"context"
	"testing"
)

// BenchmarkLoneCaller is Lock+Unlock at N=1 from one goroutine, the most
// common deployment (one process, one Redis, one lock at a time), with the
// default fencing and with fencing off. Run with -benchmem: allocations per
// Lock+Unlock are what TestLoneCallerAllocs pins.
func BenchmarkLoneCaller(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"fencing=default", nil}, {"fencing=off", []Option{WithFencing(false)}}} {
		b.Run(tc.name, func(b *testing.B) {
			_, clients := benchCluster(b, 1)
			c, err := New(clients, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m, _ := c.Mutex("lone")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l, err := m.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
