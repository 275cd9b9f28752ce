package k8sresolver

import (
	"maps"
	"net"
	"slices"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/erpc-go/erpc/resolver"
)

// addresses turns a Service's EndpointSlices into its address set: the
// ready endpoints, or, when none is ready, the serving ones that are
// terminating (marked draining), as kube-proxy does. Slices of other
// Services are ignored (the label selector should have kept them away).
func (s service) addresses(objs []*discoveryv1.EndpointSlice) []resolver.Address {
	ready := map[string]resolver.Address{}
	draining := map[string]resolver.Address{}
	for _, es := range objs {
		if es.Labels[discoveryv1.LabelServiceName] != s.name || es.Namespace != s.namespace {
			continue
		}
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		port, ok := s.portIn(es)
		if !ok {
			continue
		}
		for _, ep := range es.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			// The addresses of one endpoint are fungible: the API lets
			// consumers use the first.
			a := resolver.Address{Addr: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port)))}
			if ep.Zone != nil {
				a.Zone = *ep.Zone
			}
			a.Attrs = attrs(ep)
			switch c := ep.Conditions; {
			case c.Ready == nil || *c.Ready: // nil means ready, by the API
				ready[a.Addr] = a
			case c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating:
				a.Attrs["draining"] = "true"
				draining[a.Addr] = a
			}
		}
	}
	if len(ready) == 0 {
		ready = draining
	}
	out := make([]resolver.Address, 0, len(ready))
	for _, k := range slices.Sorted(maps.Keys(ready)) {
		out = append(out, ready[k])
	}
	return out
}

// portIn finds the target's port in a slice: a number is the port itself
// (the client dials the pods, not the Service's virtual IP); a name is
// looked up among the slice's ports, which carry the Service's port names.
func (s service) portIn(es *discoveryv1.EndpointSlice) (int32, bool) {
	if s.portName == "" {
		return s.port, true
	}
	for _, p := range es.Ports {
		if p.Name != nil && *p.Name == s.portName && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func attrs(ep discoveryv1.Endpoint) map[string]string {
	m := map[string]string{}
	if ep.NodeName != nil {
		m["node"] = *ep.NodeName
	}
	if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
		m["pod"] = ep.TargetRef.Name
	}
	return m
}
