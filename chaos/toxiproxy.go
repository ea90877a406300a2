package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/rs/zerolog"
)

// Toxiproxy is a toxiproxy server running inside this process, with its HTTP
// API served on a loopback port so that toxiproxy-cli and the official Go
// client can inspect and change a running scenario:
//
//	toxiproxy-cli -h <URL without http://> list
type Toxiproxy struct {
	srv  *toxiproxy.ApiServer
	http *http.Server
	url  string
	done chan struct{}
}

// StartToxiproxy starts an embedded toxiproxy server and its HTTP API on a
// free loopback port. Close stops every proxy and the API.
func StartToxiproxy() (*Toxiproxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: toxiproxy API listener: %w", err)
	}
	tp := &Toxiproxy{
		srv:  srv,
		http: &http.Server{Handler: srv.Routes(), ReadHeaderTimeout: 10 * time.Second},
		url:  "http://" + ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(tp.done)
		_ = tp.http.Serve(ln)
	}()
	return tp, nil
}

// URL is the base URL of the HTTP API, e.g. "http://127.0.0.1:40123".
func (tp *Toxiproxy) URL() string { return tp.url }

// Server is the embedded toxiproxy server, for what this package does not wrap.
func (tp *Toxiproxy) Server() *toxiproxy.ApiServer { return tp.srv }

// NewProxy creates and starts a proxy named name on a free loopback port in
// front of upstream ("host:port"). The upstream need not be listening yet:
// the proxy dials it once per accepted connection.
func (tp *Toxiproxy) NewProxy(name, upstream string) (*Proxy, error) {
	px := toxiproxy.NewProxy(tp.srv, name, "127.0.0.1:0", upstream)
	if err := tp.srv.Collection.Add(px, true); err != nil {
		return nil, fmt.Errorf("chaos: add proxy %s: %w", name, err)
	}
	return &Proxy{name: name, emb: px}, nil
}

// Close stops all proxies (closing their connections) and the HTTP API.
func (tp *Toxiproxy) Close() error {
	err := tp.srv.Collection.Clear()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(err, tp.http.Shutdown(ctx))
	<-tp.done
	return err
}

// Toxic is one toxiproxy toxic, in the shape of toxiproxy's HTTP API.
type Toxic struct {
	// Name identifies the toxic on its proxy (unique per proxy).
	Name string `json:"name"`
	// Type is a toxiproxy toxic type: "timeout", "latency", "bandwidth",
	// "slow_close", "reset_peer", "limit_data", "slicer".
	Type string `json:"type"`
	// Stream is "upstream" (client → server) or "downstream" (server → client).
	Stream string `json:"stream"`
	// Toxicity is the share of connections affected; 0 is treated as 1.
	Toxicity float32 `json:"toxicity"`
	// Attributes are the toxic's parameters, e.g. {"timeout": 0}.
	Attributes map[string]any `json:"attributes"`
}

// Proxy is one toxiproxy proxy: either embedded in this process or living in
// a toxiproxy server reached over its HTTP API (given endpoints). Its methods
// are safe for concurrent use.
type Proxy struct {
	name string
	emb  *toxiproxy.Proxy // embedded, or
	api  *toxiclient.Proxy
	// listen overrides the address clients dial for a remote proxy (the API
	// reports the listen address inside the toxiproxy host, e.g. 0.0.0.0:7100).
	listen string

	mu sync.Mutex // serialises remote calls (toxiclient.Proxy is not safe for concurrent use)
}

// Name is the proxy's name in toxiproxy.
func (p *Proxy) Name() string { return p.name }

// Addr is the address clients dial to go through the proxy.
func (p *Proxy) Addr() string {
	if p.listen != "" {
		return p.listen
	}
	if p.emb != nil {
		p.emb.Lock()
		defer p.emb.Unlock()
		return p.emb.Listen
	}
	return p.api.Listen
}

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string {
	if p.emb != nil {
		p.emb.Lock()
		defer p.emb.Unlock()
		return p.emb.Upstream
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.api.Upstream
}

// AddToxic adds a toxic. New connections and existing ones are affected.
func (p *Proxy) AddToxic(ctx context.Context, t Toxic) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	if p.emb != nil {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := p.emb.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("chaos: add toxic %s to %s: %w", t.Name, p.name, err)
		}
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.api.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, toxiclient.Attributes(t.Attributes))
	if err != nil && strings.Contains(err.Error(), "already exists") {
		// A toxiproxy server (the Docker backend's container) can apply a
		// removal and still fail its HTTP answer under load, or apply an
		// add whose answer timed out: the heal before this step failed
		// and its toxic is still there (three CI runs at once:
		// "toxic already exists"). Adding means "this toxic is in place":
		// it replaces the old one.
		if rerr := p.api.RemoveToxic(t.Name); rerr == nil {
			_, err = p.api.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, toxiclient.Attributes(t.Attributes))
		}
	}
	if err != nil {
		return fmt.Errorf("chaos: add toxic %s to %s: %w", t.Name, p.name, err)
	}
	return nil
}

// RemoveToxic removes the toxic named name.
func (p *Proxy) RemoveToxic(ctx context.Context, name string) error {
	if p.emb != nil {
		if err := p.emb.Toxics.RemoveToxic(ctx, name); err != nil {
			return fmt.Errorf("chaos: remove toxic %s from %s: %w", name, p.name, err)
		}
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.api.RemoveToxic(name); err != nil {
		return fmt.Errorf("chaos: remove toxic %s from %s: %w", name, p.name, err)
	}
	return nil
}

// Toxics lists the names of the active toxics.
func (p *Proxy) Toxics() ([]string, error) {
	var names []string
	if p.emb != nil {
		for _, t := range p.emb.Toxics.GetToxicArray() {
			b, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			var v struct{ Name string }
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, err
			}
			names = append(names, v.Name)
		}
		return names, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ts, err := p.api.Toxics()
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return names, nil
}

// Disable stops the proxy: its listener closes (new connections are refused)
// and every open connection through it is closed.
func (p *Proxy) Disable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.emb != nil {
		p.emb.Stop()
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.api.Disable()
}

// Enable starts a disabled proxy again on the same listen address.
func (p *Proxy) Enable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.emb != nil {
		var err error
		// The listen port was just released; retry briefly should the kernel
		// still hold it.
		for try := 0; try < 20; try++ {
			if err = p.emb.Start(); err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(25 * time.Millisecond):
			}
		}
		return fmt.Errorf("chaos: enable proxy %s: %w", p.name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.api.Enable()
}

// Enabled reports whether the proxy accepts connections.
func (p *Proxy) Enabled() bool {
	if p.emb != nil {
		p.emb.Lock()
		defer p.emb.Unlock()
		return p.emb.Enabled
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.api.Enabled
}

// ResetConnections closes every connection through the proxy (it is
// disabled and enabled again). Heal uses it after toxics that swallow bytes:
// a stream that lost bytes in the middle cannot be trusted any more (a
// replica could even parse a later command as if nothing was missing), and
// real TCP would have retransmitted them instead.
func (p *Proxy) ResetConnections(ctx context.Context) error {
	if err := p.Disable(ctx); err != nil {
		return err
	}
	return p.Enable(ctx)
}

// SetUpstream points the proxy at a new upstream (connections are reset).
func (p *Proxy) SetUpstream(ctx context.Context, upstream string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.emb != nil {
		p.emb.Lock()
		in := &toxiproxy.Proxy{Listen: p.emb.Listen, Upstream: upstream, Enabled: p.emb.Enabled}
		p.emb.Unlock()
		return p.emb.Update(in)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.api.Upstream = upstream
	return p.api.Save()
}
