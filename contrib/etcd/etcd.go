package etcdresolver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/erpc-go/erpc/resolver"
)

// Scheme is the target scheme the builder serves.
const Scheme = "etcd"

// Tuning; see the package doc for why each is what it is.
const (
	getTimeout  = 5 * time.Second
	minInterval = time.Second // between two Gets of one target
	backoffBase = 100 * time.Millisecond
	backoffMax  = 10 * time.Second
)

// New returns a builder for "etcd:///prefix" targets over cli. The client
// is the caller's: resolvers never close it.
func New(cli *clientv3.Client) resolver.Builder { return builder{cli: cli} }

// Register registers New(cli) for the "etcd" scheme, so that
// erpc.NewClient("etcd:///services/db/") resolves through cli.
func Register(cli *clientv3.Client) { resolver.Register(New(cli)) }

type builder struct{ cli *clientv3.Client }

func (builder) Scheme() string { return Scheme }

func (b builder) Build(t resolver.Target, w resolver.Watcher) (resolver.Resolver, error) {
	if t.Authority != "" {
		return nil, fmt.Errorf("etcdresolver: target %q names an authority; the client given to New says which cluster (etcd:///prefix)", t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &etcdResolver{
		cli: b.cli, prefix: t.Endpoint, rep: resolver.NewReporter(w),
		resolveNow: make(chan struct{}, 1),
		ctx:        ctx, cancel: cancel, done: make(chan struct{}),
	}
	go r.run()
	return r, nil
}

// etcdResolver keeps the set under one prefix: a Get, then a Watch from
// the Get's revision applying each change; a watch that ends (compaction,
// cancellation) or a ResolveNow starts over with a Get.
type etcdResolver struct {
	cli        *clientv3.Client
	prefix     string
	rep        *resolver.Reporter
	resolveNow chan struct{}
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
	closeOnce  sync.Once

	// Owned by run's goroutine.
	keys    map[string]resolver.Address
	lastGet time.Time
}

func (r *etcdResolver) ResolveNow() {
	select {
	case r.resolveNow <- struct{}{}:
	default:
	}
}

// Close ends the Get or Watch in progress and waits for the goroutine.
func (r *etcdResolver) Close() {
	r.closeOnce.Do(func() {
		r.cancel()
		r.rep.Close()
		<-r.done
	})
}

func (r *etcdResolver) run() {
	defer close(r.done)
	failures := 0
	for r.ctx.Err() == nil {
		if wait := time.Until(r.lastGet.Add(minInterval)); wait > 0 && !r.sleep(wait) {
			return
		}
		rev, err := r.load()
		if err != nil {
			failures++
			r.rep.Error(err)
			if !r.sleep(backoff(failures)) {
				return
			}
			continue
		}
		failures = 0
		if err := r.watch(rev + 1); err != nil && r.ctx.Err() == nil {
			r.rep.Error(err)
		}
	}
}

// load Gets every key under the prefix, reports the set, and returns the
// revision it saw.
func (r *etcdResolver) load() (int64, error) {
	r.lastGet = time.Now()
	ctx, cancel := context.WithTimeout(r.ctx, getTimeout)
	defer cancel()
	resp, err := r.cli.Get(ctx, r.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcdresolver: get %q: %w", r.prefix, err)
	}
	r.keys = map[string]resolver.Address{}
	var bad []error
	for _, kv := range resp.Kvs {
		bad = r.apply(bad, string(kv.Key), kv.Value)
	}
	r.report(bad)
	return resp.Header.Revision, nil
}

// apply records a key's value, or drops the key if its value is malformed
// (collecting why).
func (r *etcdResolver) apply(bad []error, key string, value []byte) []error {
	a, err := parseValue(key, value)
	if err != nil {
		delete(r.keys, key)
		return append(bad, err)
	}
	r.keys[key] = a
	return bad
}

// report delivers the current set, then what was wrong with any key.
func (r *etcdResolver) report(bad []error) {
	keys := slices.Sorted(maps.Keys(r.keys))
	addrs := make([]resolver.Address, 0, len(keys))
	for _, k := range keys {
		addrs = append(addrs, r.keys[k])
	}
	r.rep.Update(resolver.State{Addresses: addrs})
	if len(bad) > 0 {
		r.rep.Error(errors.Join(bad...))
	}
}

var errWatchEnded = errors.New("etcdresolver: watch ended")

// watch applies changes from rev on until the watch ends (returning why),
// ResolveNow asks for a fresh Get (nil), or Close. clientv3's Watch blocks
// while the cluster is unreachable, so ResolveNow is heard by a goroutine
// of its own, which ends the watch by cancelling its context.
func (r *etcdResolver) watch(rev int64) error {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go r.cancelOnResolveNow(ctx, cancel, r.lastGet.Add(minInterval))
	wch := r.cli.Watch(clientv3.WithRequireLeader(ctx), r.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return fmt.Errorf("etcdresolver: watch %q: %w", r.prefix, err)
		}
		var bad []error
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				delete(r.keys, string(ev.Kv.Key))
				continue
			}
			bad = r.apply(bad, string(ev.Kv.Key), ev.Kv.Value)
		}
		r.report(bad)
	}
	if ctx.Err() != nil {
		return nil // Close, or ResolveNow
	}
	return errWatchEnded
}

// cancelOnResolveNow cancels a watch when ResolveNow asks, but not before
// earliest (the last Get plus the least interval between Gets).
func (r *etcdResolver) cancelOnResolveNow(ctx context.Context, cancel context.CancelFunc, earliest time.Time) {
	select {
	case <-ctx.Done():
		return
	case <-r.resolveNow:
	}
	if wait := time.Until(earliest); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	cancel()
}

// sleep waits d, or returns false on Close.
func (r *etcdResolver) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// backoff is the wait after the n-th consecutive failed Get: base·2^(n-1)
// up to max, jittered by ±20 % so the clients of a restarted cluster do not
// return in step.
func backoff(n int) time.Duration {
	d := backoffBase
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
