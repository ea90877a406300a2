package matrix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/localredis"
)

// expiryRaceLease is the lease of the abandoned holders of expiryRace:
// short, so that a cell sees many expiries, and long enough for a quorum
// of three to grant it with validity to spare on a loaded machine.
const expiryRaceLease = 40 * time.Millisecond

// lastMillisecond names the nemesis event of a contender's TryLock fired
// in a key's last millisecond.
const lastMillisecond = "expiry-race(last-ms TryLock)"

// expiryRace is a stream of crashed holders and cron-style contenders, on
// locks of their own (one name per round, next to the workers' lock): a
// holder takes a free lock (the mode's own lock, so the fast path's SET NX
// PX string) with a fixed lease and abandons it, never unlocking, as a
// crashed process would; a contender watches the key's PTTL on the first
// lock node and fires its TryLock the moment the key enters its last
// millisecond, the contender's script being the first to touch the string.
// Whatever the contender gets it abandons too. The lock must free itself
// every time: the matrix's expiry check afterwards finds any key the race
// left without a TTL.
type expiryRace struct {
	c *cell

	stop context.CancelFunc
	done chan struct{}
	err  error

	rounds, granted, fired, late, stuck, contended int
}

func (e *expiryRace) String() string { return "expiry-race" }

// direct gives clients that reach the lock nodes without the proxies (the
// race is about one millisecond; a proxy hop adds its own jitter).
func (e *expiryRace) direct() []*redis.Client {
	var out []*redis.Client
	for _, n := range e.c.lockNodes() {
		out = append(out, redis.NewClient(localredis.ClientOptions(n.Admin().Options().Addr)))
	}
	return out
}

func (e *expiryRace) Inject(ctx context.Context) error {
	if e.done != nil {
		return errors.New("matrix: expiry-race injected twice")
	}
	// Inject's context ends when Inject returns; the race runs until
	// Recover.
	ctx, e.stop = context.WithCancel(context.WithoutCancel(ctx))
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		e.err = e.run(ctx)
	}()
	return nil
}

func (e *expiryRace) Recover(context.Context) error {
	if e.done == nil {
		return nil
	}
	e.stop()
	<-e.done
	e.c.rec.SetMeta("expiry_race", e.summary())
	return e.err
}

func (e *expiryRace) summary() string {
	return fmt.Sprintf("%d rounds: %d abandoned holders, %d contenders fired in the key's last millisecond (%d rounds missed it), %d granted to the contender, %d keys found without expiry",
		e.rounds, e.granted, e.fired, e.late, e.contended, e.stuck)
}

func (e *expiryRace) run(ctx context.Context) error {
	holders, contenders := e.direct(), e.direct()
	defer func() {
		for _, c := range append(holders, contenders...) {
			_ = c.Close()
		}
	}()
	admin := e.c.lockNodes()[0].Admin()
	for r := 0; ctx.Err() == nil; r++ {
		name := fmt.Sprintf("%s-expiry-race-%d", LockName, r)
		if err := e.round(ctx, admin, holders, contenders, name); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (e *expiryRace) round(ctx context.Context, admin *redis.Client, holders, contenders []*redis.Client, name string) error {
	e.rounds++
	uc := func(cs []*redis.Client) []redis.UniversalClient {
		out := make([]redis.UniversalClient, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out
	}
	// The lock's default attempt timeout (the cell's, if set, is meant for
	// the workers' lease and may exceed this one).
	params := LockParams{Name: name, LeaseTime: expiryRaceLease}
	params.Clients = uc(holders)
	h, closeH, err := e.c.mode.Lock(params)
	if err != nil {
		return err
	}
	if closeH != nil {
		defer closeH()
	}
	params.Clients = uc(contenders)
	ct, closeC, err := e.c.mode.Lock(params)
	if err != nil {
		return err
	}
	if closeC != nil {
		defer closeC()
	}
	if _, err := h.TryLock(ctx); err != nil {
		return nil // not granted (a slow quorum): the next round tries again
	}
	e.granted++ // and abandoned: no Unlock
	key := node.DefaultPrefix + "{" + name + "}"
	// Sleep until shortly before the expiry, then poll the key's PTTL
	// until it answers 0 (the last millisecond, the key still there).
	if !sleep(ctx, expiryRaceLease-8*time.Millisecond) {
		return nil
	}
	for {
		pt, err := admin.PTTL(ctx, key).Result()
		if err != nil {
			return nil
		}
		if pt == 0 {
			break
		}
		if pt < 0 {
			e.late++ // expired between two polls
			return nil
		}
	}
	e.fired++
	// Each contender fired in the last millisecond is a fault event (the
	// race's span, a setting, is not).
	e.c.rec.NemesisStart(lastMillisecond).Ok()
	_, terr := ct.TryLock(ctx)
	e.c.rec.NemesisEnd(lastMillisecond).Ok()
	if terr == nil {
		e.contended++ // and abandoned as well
	}
	if pt, err := admin.PTTL(ctx, key).Result(); err == nil && pt == -1 {
		e.stuck++
	}
	return nil
}
