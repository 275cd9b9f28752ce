package k8sresolver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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

func build(t *testing.T, cs *fake.Clientset, target string) (resolver.Resolver, *chanWatcher) {
	t.Helper()
	tg, err := resolver.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	w := &chanWatcher{t: t, updates: make(chan resolver.State, 1000), errs: make(chan error, 1000)}
	r, err := New(cs).Build(tg, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.closed.Store(true) })
	return r, w
}

// ep is an endpoint: ready, or (ready false) serving and terminating.
type ep struct {
	ip, zone, pod      string
	notReady, draining bool
}

func slice(svc, ns, name string, family discoveryv1.AddressType, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	portName := "rpc"
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, e := range eps {
		ready, serving, terminating := !e.notReady && !e.draining, !e.notReady, e.draining
		zone := e.zone
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			Zone:       &zone,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: e.pod},
		})
	}
	return es
}

func addr(a, zone, pod string) resolver.Address {
	return resolver.Address{Addr: a, Zone: zone, Attrs: map[string]string{"pod": pod}}
}

type client struct {
	t  *testing.T
	cs *fake.Clientset
}

func (c client) apply(es *discoveryv1.EndpointSlice) {
	c.t.Helper()
	api := c.cs.DiscoveryV1().EndpointSlices(es.Namespace)
	_, err := api.Update(context.Background(), es, metav1.UpdateOptions{})
	if err != nil {
		_, err = api.Create(context.Background(), es, metav1.CreateOptions{})
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c client) delete(ns, name string) {
	c.t.Helper()
	if err := c.cs.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// TestFollowsEndpointSlices: a Service's slices through create, scale up
// and down, an endpoint not ready, a second (IPv6) slice, another
// Service's slice, and deletion.
func TestFollowsEndpointSlices(t *testing.T) {
	cs := fake.NewClientset()
	c := client{t, cs}
	_, w := build(t, cs, "k8s:///db.prod:rpc")
	w.expectSet(t) // no slices yet: an empty set, once synced

	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000,
		ep{ip: "10.0.0.1", zone: "a", pod: "db-1"}, ep{ip: "10.0.0.2", zone: "b", pod: "db-2"}))
	w.expectSet(t, addr("10.0.0.1:7000", "a", "db-1"), addr("10.0.0.2:7000", "b", "db-2"))

	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000,
		ep{ip: "10.0.0.1", zone: "a", pod: "db-1"}, ep{ip: "10.0.0.2", zone: "b", pod: "db-2"}, ep{ip: "10.0.0.3", zone: "a", pod: "db-3"}))
	w.expectSet(t, addr("10.0.0.1:7000", "a", "db-1"), addr("10.0.0.2:7000", "b", "db-2"), addr("10.0.0.3:7000", "a", "db-3"))

	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000,
		ep{ip: "10.0.0.1", zone: "a", pod: "db-1"}, ep{ip: "10.0.0.3", zone: "a", pod: "db-3", notReady: true}))
	w.expectSet(t, addr("10.0.0.1:7000", "a", "db-1"))

	c.apply(slice("web", "prod", "web-v4", discoveryv1.AddressTypeIPv4, 7000, ep{ip: "10.0.9.9", pod: "web-1"}))
	c.apply(slice("db", "staging", "db-v4", discoveryv1.AddressTypeIPv4, 7000, ep{ip: "10.0.8.8", pod: "db-s"}))
	c.apply(slice("db", "prod", "db-v6", discoveryv1.AddressTypeIPv6, 7000, ep{ip: "fd00::4", zone: "c", pod: "db-4"}))
	w.expectSet(t, addr("10.0.0.1:7000", "a", "db-1"), addr("[fd00::4]:7000", "c", "db-4"))

	c.delete("prod", "db-v4")
	w.expectSet(t, addr("[fd00::4]:7000", "c", "db-4"))
	c.delete("prod", "db-v6")
	w.expectSet(t)
	if n := len(w.errs); n != 0 {
		t.Fatalf("%d errors: %v", n, <-w.errs)
	}
}

// TestDrainingEndpoints: serving-but-terminating endpoints are left out
// while any endpoint is ready, and used, marked draining, when none is.
func TestDrainingEndpoints(t *testing.T) {
	cs := fake.NewClientset()
	c := client{t, cs}
	_, w := build(t, cs, "k8s:///db.prod:7000")
	w.expectSet(t)
	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000,
		ep{ip: "10.0.0.1", pod: "db-1", draining: true}, ep{ip: "10.0.0.2", pod: "db-2"}))
	w.expectSet(t, addr("10.0.0.2:7000", "", "db-2"))
	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000,
		ep{ip: "10.0.0.1", pod: "db-1", draining: true}, ep{ip: "10.0.0.2", pod: "db-2", notReady: true}))
	w.expectSet(t, resolver.Address{Addr: "10.0.0.1:7000", Attrs: map[string]string{"pod": "db-1", "draining": "true"}})
}

// TestNamedAndNumberedPorts: a port name is looked up in the slice's
// ports; a number is used as is; a name the slice lacks gives nothing.
func TestNamedAndNumberedPorts(t *testing.T) {
	cs := fake.NewClientset()
	c := client{t, cs}
	c.apply(slice("db", "default", "db-v4", discoveryv1.AddressTypeIPv4, 7000, ep{ip: "10.0.0.1", pod: "db-1"}))
	for target, want := range map[string][]resolver.Address{
		"k8s:///db:rpc":          {addr("10.0.0.1:7000", "", "db-1")},
		"k8s:///db.default:9000": {addr("10.0.0.1:9000", "", "db-1")},
		"k8s:///db:metrics":      nil,
	} {
		_, w := build(t, cs, target)
		w.expectSet(t, want...)
	}
}

func TestParseTarget(t *testing.T) {
	good := map[string]service{
		"k8s:///db.prod:7000": {name: "db", namespace: "prod", port: 7000},
		"k8s:///db:rpc":       {name: "db", namespace: "default", portName: "rpc"},
	}
	for s, want := range good {
		tg, _ := resolver.Parse(s)
		if got, err := parseTarget(tg); err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"k8s:///db.prod", "k8s:///db.prod.svc.cluster.local:7000", "k8s://cluster/db.prod:7000", "k8s:///db:0", "k8s:///:7000"} {
		tg, _ := resolver.Parse(s)
		if _, err := parseTarget(tg); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// TestCloseStopsCallbacks: resolvers closed while their Service's slice
// keeps changing call nothing after Close returns (run under -race).
func TestCloseStopsCallbacks(t *testing.T) {
	cs := fake.NewClientset()
	c := client{t, cs}
	c.apply(slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000, ep{ip: "10.0.0.1", pod: "db"}))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			es := slice("db", "prod", "db-v4", discoveryv1.AddressTypeIPv4, 7000, ep{ip: fmt.Sprintf("10.0.0.%d", i%200+1), pod: "db"})
			cs.DiscoveryV1().EndpointSlices("prod").Update(context.Background(), es, metav1.UpdateOptions{})
		}
	}()
	updates := 0
	for range 20 {
		tg, _ := resolver.Parse("k8s:///db.prod:7000")
		w := &chanWatcher{t: t, updates: make(chan resolver.State, 100000), errs: make(chan error, 1000)}
		r, err := New(cs).Build(tg, w)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.updates:
			updates++
		case <-time.After(failsafe):
			t.Fatal("no update")
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
