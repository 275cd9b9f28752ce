package k8sresolver

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/erpc-go/erpc/resolver"
)

// service is what a k8s target names.
type service struct {
	name, namespace string
	port            int32  // a port number, or 0
	portName        string // a port name, instead
}

// parseTarget reads "k8s:///service.namespace:port" (or
// "k8s:///service:port" in the namespace "default"); the port is a number
// or the name of one of the Service's ports.
func parseTarget(t resolver.Target) (service, error) {
	var s service
	if t.Authority != "" {
		return s, fmt.Errorf("k8sresolver: target %q names an authority; the clientset given to New says which cluster (k8s:///service.namespace:port)", t)
	}
	host, port, err := net.SplitHostPort(t.Endpoint)
	if err != nil || host == "" || port == "" {
		return s, fmt.Errorf("k8sresolver: target %q is not k8s:///service.namespace:port", t)
	}
	s.name, s.namespace, _ = strings.Cut(host, ".")
	if s.namespace == "" {
		s.namespace = "default"
	}
	if strings.Contains(s.namespace, ".") {
		return s, fmt.Errorf("k8sresolver: target %q: %q is not service.namespace (write the Service's name and namespace, not its DNS name)", t, host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		if n == 0 {
			return s, fmt.Errorf("k8sresolver: target %q: port 0", t)
		}
		s.port = int32(n)
	} else {
		s.portName = port
	}
	return s, nil
}
