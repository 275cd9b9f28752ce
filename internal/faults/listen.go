package faults

import (
	"fmt"
	"strings"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/erpc-go/erpc/transport/shm"
	"github.com/erpc-go/erpc/transport/udp"
)

// UDP opens a UDP transport on addr that drops each datagram it sends with
// probability p.
func UDP(addr string, p float64, seed uint64) (transport.Transport, error) {
	u, err := udp.Listen(addr, udp.Options{})
	if err != nil {
		return nil, err
	}
	return Lossy(u, p, seed), nil
}

// Listen opens the transport an endpoint on addr would have ("host:port"
// or "udp://host:port", "mem://name", "shm:///path"), dropping each
// datagram it sends with probability p. Give it to an endpoint with
// erpc.WithTransport; its Target names addr's transport as usual.
func Listen(addr string, p float64, seed uint64) (transport.Transport, error) {
	scheme, rest, found := strings.Cut(addr, "://")
	if !found {
		scheme, rest = "udp", addr
	}
	var tr transport.Transport
	var err error
	switch scheme {
	case "udp":
		return UDP(rest, p, seed)
	case "mem":
		tr, err = memnet.Default().Listen(rest)
	case "shm":
		tr, err = shm.Listen(rest, shm.Options{})
	default:
		err = fmt.Errorf("faults: unknown transport in %q", addr)
	}
	if err != nil {
		return nil, err
	}
	return Lossy(tr, p, seed), nil
}
