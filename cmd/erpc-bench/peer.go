package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/erpc-go/erpc"
)

// allSystems lists every system erpc-bench knows, in display order.
var allSystems = []string{"erpc", "erpc-call", "erpc-nocc", "erpc-udp", "raw-udp", "udp-floor", "udp-plain", "raw-shm", "grpc", "netrpc", "drpc"}

func knownSystem(s string) bool { return slices.Contains(allSystems, s) }

// peer is one system with its running server and client.
type peer struct {
	system string
	srv    *server
	cli    client
}

func (p *peer) stop() {
	if p.cli != nil {
		p.cli.close()
	}
	if p.srv != nil {
		p.srv.stop()
	}
}

// peerConfig is what starting a system's server and client needs.
type peerConfig struct {
	transport string // erpc's
	busy      bool
	window    int
	rawDgram  int
	rawWindow int
	loss      float64
	cpu       int // the server's CPU; -1: not pinned
}

// startPeer brings up system's server and a client connected to it.
func startPeer(system string, cfg peerConfig) (*peer, error) {
	loss := cfg.loss
	defer watchdog("starting "+system, 60*time.Second)()
	if system == "memcpy" {
		return &peer{system: system, cli: memcpyClient{}}, nil
	}
	// erpc-udp is erpc over UDP beside erpc over another -transport.
	srvSys, tr := system, cfg.transport
	switch system {
	case "erpc-udp":
		srvSys, tr = "erpc", "udp"
	case "erpc-nocc": // congestion control is the client's: the server is erpc's
		srvSys = "erpc"
	}
	srv, err := startServer(srvConfig{system: srvSys, transport: tr, busy: cfg.busy,
		loss: loss, window: cfg.window, cpu: cfg.cpu})
	if err != nil {
		return nil, err
	}
	p := &peer{system: system, srv: srv}
	switch system {
	case "erpc", "erpc-call", "erpc-udp", "erpc-nocc":
		opts := erpcOptions(cfg.busy, cfg.window)
		if system == "erpc-nocc" {
			opts = append(opts, erpc.WithoutCongestionControl())
		}
		p.cli, err = newErpcClient(srv.addr, tr, opts, loss, system != "erpc-call")
	case "raw-udp":
		p.cli, err = newRawUDPClient(srv.addr, cfg.busy, cfg.rawDgram, cfg.rawWindow)
	case "udp-floor", "udp-plain":
		p.cli, err = newUDPFloorClient(srv, system == "udp-plain")
	case "raw-shm":
		p.cli, err = newRawShmClient(srv)
	case "grpc":
		p.cli, err = newGRPCClient(srv.addr)
	case "netrpc":
		p.cli, err = newNetRPCClient(srv.addr)
	case "drpc":
		p.cli, err = newDRPCClient(srv.addr)
	default:
		err = fmt.Errorf("unknown system %q", system)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("%s client: %w", system, err)
	}
	return p, nil
}

// transportOf names what a system runs over.
func transportOf(system, erpcTransport string) string {
	switch system {
	case "erpc", "erpc-call", "erpc-nocc":
		return erpcTransport
	case "memcpy":
		return "mem"
	case "raw-udp", "udp-floor", "udp-plain", "erpc-udp":
		return "udp"
	case "raw-shm":
		return "shm"
	}
	return "tcp"
}

// The servers of the systems under test; erpc-udp and erpc-nocc use
// erpc's.
func init() {
	registerServer("erpc", newErpcServer)
	registerServer("erpc-call", newErpcServer)
	registerServer("raw-udp", newRawUDPServer)
	registerServer("udp-floor", newUDPFloorServer)
	registerServer("udp-plain", newUDPFloorServer)
	registerServer("raw-shm", newRawShmServer)
	registerServer("grpc", newGRPCServer)
	registerServer("netrpc", newNetRPCServer)
	registerServer("drpc", newDRPCServer)
}
