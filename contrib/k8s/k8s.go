package k8sresolver

import (
	"fmt"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/erpc-go/erpc/resolver"
)

// Scheme is the target scheme the builder serves.
const Scheme = "k8s"

// New returns a builder for "k8s:///service.namespace:port" targets over
// cs. The clientset is the caller's.
func New(cs kubernetes.Interface) resolver.Builder { return builder{cs: cs} }

// Register registers New(cs) for the "k8s" scheme.
func Register(cs kubernetes.Interface) { resolver.Register(New(cs)) }

type builder struct{ cs kubernetes.Interface }

func (builder) Scheme() string { return Scheme }

func (b builder) Build(t resolver.Target, w resolver.Watcher) (resolver.Resolver, error) {
	svc, err := parseTarget(t)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(b.cs, 0,
		informers.WithNamespace(svc.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discoveryv1.LabelServiceName + "=" + svc.name
		}))
	r := &k8sResolver{svc: svc, rep: resolver.NewReporter(w), factory: factory, stop: make(chan struct{})}
	r.informer = factory.Discovery().V1().EndpointSlices().Informer()
	if err := r.informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		r.rep.Error(fmt.Errorf("k8sresolver: watching the EndpointSlices of %s.%s: %w", svc.name, svc.namespace, err))
	}); err != nil {
		return nil, err
	}
	changed := func(any) { r.report() }
	if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, err
	}
	factory.Start(r.stop)
	go r.reportWhenSynced()
	return r, nil
}

// k8sResolver follows one Service's EndpointSlices through an informer
// (a list, then a watch, relisting on its own after errors) and reports the
// whole set after each change.
type k8sResolver struct {
	svc       service
	rep       *resolver.Reporter
	factory   informers.SharedInformerFactory
	informer  cache.SharedIndexInformer
	stop      chan struct{}
	mu        sync.Mutex // one report at a time, so a stale set never follows a newer one
	closeOnce sync.Once
}

// reportWhenSynced reports the set once the first list is in, so that a
// Service with no slices at all is reported, as an empty set.
func (r *k8sResolver) reportWhenSynced() {
	if cache.WaitForCacheSync(r.stop, r.informer.HasSynced) {
		r.report()
	}
}

func (r *k8sResolver) report() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var objs []*discoveryv1.EndpointSlice
	for _, o := range r.informer.GetStore().List() {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			objs = append(objs, es)
		}
	}
	r.rep.Update(resolver.State{Addresses: r.svc.addresses(objs)})
}

// ResolveNow does nothing: the informer's watch already pushes every
// change, and it relists by itself after an error.
func (r *k8sResolver) ResolveNow() {}

// Close stops the informer and waits for its goroutines.
func (r *k8sResolver) Close() {
	r.closeOnce.Do(func() {
		r.rep.Close()
		close(r.stop)
		r.factory.Shutdown()
	})
}
