// Package k8sresolver resolves "k8s:///service.namespace:port" targets for
// erpc's fleet client from a Kubernetes Service's EndpointSlices
// (discovery.k8s.io/v1), through k8s.io/client-go.
//
//	cfg, err := rest.InClusterConfig()
//	cs, err := kubernetes.NewForConfig(cfg)
//	k8sresolver.Register(cs)
//	c, err := erpc.NewClient("k8s:///db.prod:rpc")
//
// # Targets
//
// "k8s:///db.prod:7000" is the Service db in the namespace prod;
// "k8s:///db:7000" is in the namespace "default". The port is a number,
// used as is, or the name of one of the Service's ports ("k8s:///db.prod:rpc"),
// looked up in each slice: the client dials the pods directly, not the
// Service's virtual IP, so it needs the pods' port, which a name finds even
// where the Service maps port 80 to a targetPort 7000. The authority must
// be empty: the clientset given to New says which cluster. The resolver
// needs list and watch on endpointslices in the namespace.
//
// A headless Service (clusterIP: None) needs none of this: its DNS name
// resolves to the ready pods' addresses, so "dns:///db.prod.svc.cluster.local:7000"
// works through the built-in dns resolver, re-resolved on its period
// instead of pushed.
//
// # Which endpoints
//
// The set is the ready endpoints (conditions.ready true, or unset, which
// the API says means ready), each as its first address (the API makes an
// endpoint's addresses fungible) with the port, Zone from the endpoint's
// zone, and Attrs "node" and "pod". An endpoint that is serving but
// terminating is draining: its pod got SIGTERM and finishes what it has;
// it is left out so no new calls go to it, unless no endpoint is ready at
// all, when the serving-and-terminating ones are the set, marked
// Attrs["draining"] = "true" (kube-proxy falls back the same way). A
// Service with no ready endpoint is reported as an empty set: scaling to
// zero is a real state in Kubernetes, not a failed look-up. Slices of
// address type FQDN (deprecated) are ignored.
//
// # Design
//
// One shared informer per target, on the target's namespace, listing and
// watching the EndpointSlices labelled kubernetes.io/service-name=service.
// After each change, and once after the first list (so an empty Service is
// reported), the whole set is computed from the informer's store and
// reported when it changed. The informer relists on its own after a watch
// error, which is reported with Watcher.Error; ResolveNow does nothing, as
// every change is already pushed. Close stops the informer and waits for
// it.
//
// The tests drive it with client-go's fake clientset.
package k8sresolver
