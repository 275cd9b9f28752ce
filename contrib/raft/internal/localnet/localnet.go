// Package localnet names the erpc addresses of a cluster whose replicas all
// run in this process, on one of the networks the tests and benchmarks use:
// UDP loopback, shm (unix sockets in a temporary directory) or memnet; and
// opens endpoints on them that lose packets, for the tests of loss.
package localnet

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/erpc-go/erpc"
)

// Net hands out listen addresses on one network.
type Net struct {
	network string // "udp", "shm" or "mem"
	prefix  string // memnet names and the shm directory start with it
	tag     uint32 // keeps memnet names of clusters in one process apart
	dir     string // shm: the directory of the sockets
}

// New prepares network ("" or "udp", "shm", "mem") for a cluster whose
// names start with prefix. Close removes what it made.
func New(network, prefix string) (*Net, error) {
	n := &Net{network: network, prefix: prefix, tag: rand.Uint32()}
	switch network {
	case "", "udp":
		n.network = "udp"
	case "mem":
	case "shm":
		dir, err := os.MkdirTemp("", prefix+"-shm-")
		if err != nil {
			return nil, err
		}
		n.dir = dir
	default:
		return nil, fmt.Errorf("%s: unknown network %q", prefix, network)
	}
	return n, nil
}

// Listen is the address replica i listens on.
func (n *Net) Listen(i int) string {
	switch n.network {
	case "mem":
		return fmt.Sprintf("mem://%s-%08x-%d", n.prefix, n.tag, i)
	case "shm":
		return "shm://" + filepath.Join(n.dir, fmt.Sprintf("r%d.sock", i))
	}
	return "127.0.0.1:0"
}

// Close removes the shm sockets' directory.
func (n *Net) Close() {
	if n.dir != "" {
		os.RemoveAll(n.dir)
	}
}

// Client is the address a client endpoint listens on in network.
func Client(network string) string {
	switch network {
	case "mem":
		return "mem://"
	case "shm":
		return "shm://"
	}
	return "127.0.0.1:0"
}

// Dialable is the address peers dial to reach ep, which listens on listen:
// a name for memnet and shm (an shm endpoint's address is synthetic), the
// bound address and port for UDP.
func Dialable(listen string, ep *erpc.Endpoint) string {
	if strings.HasPrefix(listen, "mem://") || strings.HasPrefix(listen, "shm://") {
		return listen
	}
	return ep.Addr().String()
}

// Advertise is what peers dial to reach an endpoint that will listen on
// listen, where that is known before it listens: a memnet or shm name as
// given; "" for UDP, whose port the endpoint picks (its Target, or
// Dialable, gives it once it listens).
func Advertise(listen string) string {
	if strings.HasPrefix(listen, "mem://") || strings.HasPrefix(listen, "shm://") {
		return listen
	}
	return ""
}
