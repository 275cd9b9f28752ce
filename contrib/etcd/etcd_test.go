package etcdresolver

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/erpc-go/erpc/resolver"
)

const failsafe = 30 * time.Second

// chanWatcher queues what it hears; after closed is set, any call fails
// the test.
type chanWatcher struct {
	t       *testing.T
	updates chan resolver.State
	errs    chan error
	closed  atomic.Bool
}

func newChanWatcher(t *testing.T) *chanWatcher {
	return &chanWatcher{t: t, updates: make(chan resolver.State, 1000), errs: make(chan error, 1000)}
}

func (w *chanWatcher) Update(s resolver.State) { w.check(); w.updates <- s }
func (w *chanWatcher) Error(err error)         { w.check(); w.errs <- err }
func (w *chanWatcher) check() {
	if w.closed.Load() {
		w.t.Error("a Watcher call after Close returned")
	}
}

// expectSet waits for an update whose set is want (in any order).
func (w *chanWatcher) expectSet(t *testing.T, want ...resolver.Address) {
	t.Helper()
	timeout := time.After(failsafe)
	var last []resolver.Address
	for {
		select {
		case s := <-w.updates:
			if last = s.Addresses; resolver.Equal(last, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no update to %+v; the last was %+v", want, last)
		}
	}
}

func addr(a string) resolver.Address { return resolver.Address{Addr: a} }

func build(t *testing.T, cli *clientv3.Client, target string) (resolver.Resolver, *chanWatcher) {
	t.Helper()
	tg, err := resolver.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	w := newChanWatcher(t)
	r, err := New(cli).Build(tg, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.closed.Store(true) })
	return r, w
}

// TestFollowsKeys: the set is the keys under the prefix, from the first
// Get and then from the watch: added, changed to the JSON form, deleted;
// keys outside the prefix are ignored; a malformed value is reported by
// key and left out.
func TestFollowsKeys(t *testing.T) {
	srv := startEtcd(t)
	cli := srv.client()
	defer cli.Close()
	srv.put(cli, "/svc/db/1", "127.0.0.1:7001")
	srv.put(cli, "/svc/db/2", "127.0.0.1:7002")
	srv.put(cli, "/svc/dbx", "127.0.0.1:9999") // shares no "/svc/db/" prefix
	_, w := build(t, cli, "etcd:////svc/db/")
	w.expectSet(t, addr("127.0.0.1:7001"), addr("127.0.0.1:7002"))

	srv.put(cli, "/svc/db/3", "127.0.0.1:7003")
	w.expectSet(t, addr("127.0.0.1:7001"), addr("127.0.0.1:7002"), addr("127.0.0.1:7003"))

	srv.put(cli, "/svc/db/2", `{"addr":"127.0.0.1:7022","weight":3,"zone":"z1"}`)
	w.expectSet(t, addr("127.0.0.1:7001"), resolver.Address{Addr: "127.0.0.1:7022", Weight: 3, Zone: "z1"}, addr("127.0.0.1:7003"))

	srv.del(cli, "/svc/db/1")
	srv.del(cli, "/svc/db/3")
	w.expectSet(t, resolver.Address{Addr: "127.0.0.1:7022", Weight: 3, Zone: "z1"})

	srv.put(cli, "/svc/db/2", "no port here")
	select {
	case err := <-w.errs:
		if !strings.Contains(err.Error(), `"/svc/db/2"`) {
			t.Fatalf("error %q does not name the key", err)
		}
	case <-time.After(failsafe):
		t.Fatal("a malformed value was not reported")
	}
	w.expectSet(t)
}

// TestRecoversFromRestart: etcd killed (SIGKILL) and started again on the
// same data: the resolver keeps its set through the outage (a ResolveNow
// then fails its Get and reports it), and follows changes after.
func TestRecoversFromRestart(t *testing.T) {
	srv := startEtcd(t)
	cli := srv.client()
	defer cli.Close()
	srv.put(cli, "svc/a", "127.0.0.1:7001")
	r, w := build(t, cli, "etcd:///svc/")
	w.expectSet(t, addr("127.0.0.1:7001"))

	srv.kill()
	r.ResolveNow() // a fresh Get during the outage: it fails, the set stays
	select {
	case err := <-w.errs:
		t.Logf("during the outage: %v", err)
	case <-time.After(failsafe):
		t.Fatal("a Get with etcd down reported no error")
	}
	if n := len(w.updates); n != 0 {
		t.Fatalf("%d updates during the outage, want the set kept", n)
	}
	srv.start()
	srv.put(cli, "svc/b", "127.0.0.1:7002")
	w.expectSet(t, addr("127.0.0.1:7001"), addr("127.0.0.1:7002"))
	srv.del(cli, "svc/a")
	w.expectSet(t, addr("127.0.0.1:7002"))
}

// TestCompactedWatchRestarts: a watch from a compacted revision ends with
// the compaction error, and run starts over with a Get.
func TestCompactedWatchRestarts(t *testing.T) {
	srv := startEtcd(t)
	cli := srv.client()
	defer cli.Close()
	srv.put(cli, "svc/a", "127.0.0.1:7001")
	srv.put(cli, "svc/a", "127.0.0.1:7002")
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	resp, err := cli.Get(ctx, "svc/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	w := newChanWatcher(t)
	r := &etcdResolver{cli: cli, prefix: "svc/", rep: resolver.NewReporter(w), resolveNow: make(chan struct{}, 1), ctx: rctx, keys: map[string]resolver.Address{}}
	err = r.watch(1)
	if err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("a watch from a compacted revision ended with %v", err)
	}
	// The resolver proper recovers from it: its first Get sees the latest.
	_, w2 := build(t, cli, "etcd:///svc/")
	w2.expectSet(t, addr("127.0.0.1:7002"))
}

// TestCloseStopsCallbacks: resolvers closed at once, and while changes
// stream in, call nothing after Close returns (the watcher fails the test
// otherwise; run under -race).
func TestCloseStopsCallbacks(t *testing.T) {
	srv := startEtcd(t)
	cli := srv.client()
	defer cli.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cli.Put(ctx, "churn/k", "127.0.0.1:"+[]string{"1", "2"}[i%2])
			cancel()
		}
	}()
	var updates int
	for i := range 30 {
		tg, _ := resolver.Parse("etcd:///churn/")
		w := newChanWatcher(t)
		r, err := New(cli).Build(tg, w)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			select {
			case <-w.updates:
				updates++
			case <-time.After(failsafe):
				t.Fatal("no update")
			}
		}
		r.Close()
		w.closed.Store(true)
	}
	close(stop)
	<-done
	if updates == 0 {
		t.Fatal("no resolver reported before Close")
	}
}

func TestBuildRejectsAuthority(t *testing.T) {
	if _, err := New(nil).Build(resolver.Target{Scheme: Scheme, Authority: "x", Endpoint: "svc/"}, newChanWatcher(t)); err == nil {
		t.Fatal("accepted an authority")
	}
}
