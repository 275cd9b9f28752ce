package systems

import (
	"fmt"
	"slices"
	"time"

	"github.com/erpc-go/erpc"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// All lists every system erpc-bench knows, in display order.
var All = []string{"erpc", "erpc-call", "erpc-nocc", "erpc-udp", "erpc-tls", "raw-udp", "udp-floor", "udp-plain", "raw-shm",
	"grpc", "grpc-tls", "quic", "quic-stream", "netrpc", "drpc"}

// Known reports whether s is one of All.
func Known(s string) bool { return slices.Contains(All, s) }

// Peer is one system with its running server and client.
type Peer struct {
	System string
	Srv    *proc.Server
	Cli    meter.Client
}

// Stop closes the client, then the server.
func (p *Peer) Stop() {
	if p.Cli != nil {
		p.Cli.Close()
	}
	if p.Srv != nil {
		p.Srv.Stop()
	}
}

// Config is what starting a system's server and client needs.
type Config struct {
	Transport string // erpc's
	Busy      bool
	Window    int
	RawDgram  int
	RawWindow int
	Loss      float64
	CPU       int // the server's CPU; -1: not pinned
}

// Start brings up system's server and a client connected to it.
func Start(system string, cfg Config) (*Peer, error) {
	loss := cfg.Loss
	defer meter.Watchdog("starting "+system, 60*time.Second)()
	if system == "memcpy" {
		return &Peer{System: system, Cli: memcpyClient{}}, nil
	}
	// erpc-udp is erpc over UDP beside erpc over another -transport.
	srvSys, tr := system, cfg.Transport
	switch system {
	case "erpc-udp":
		srvSys, tr = "erpc", "udp"
	case "erpc-nocc": // congestion control is the client's: the server is erpc's
		srvSys = "erpc"
	case "erpc-tls":
		tr = "udp"
	case "quic-stream": // the same server: streams of one call or of many
		srvSys = "quic"
	}
	pcfg := proc.Config{System: srvSys, Transport: tr, Busy: cfg.Busy,
		Loss: loss, Window: cfg.Window, CPU: cfg.CPU}
	if veth != nil {
		if !slices.Contains(VethSystems, system) {
			return nil, fmt.Errorf("%s does not run over the veth pair (only %v)", system, VethSystems)
		}
		pcfg.Netns, pcfg.Listen = veth.ServerNS, serverListen(srvSys, tr)
	}
	srv, err := proc.Start(pcfg)
	if err != nil {
		return nil, err
	}
	p := &Peer{System: system, Srv: srv}
	err = inClientNS(func() (err error) {
		p.Cli, err = startClient(system, srv, tr, cfg)
		return err
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s client: %w", system, err)
	}
	return p, nil
}

// startClient starts system's client of srv.
func startClient(system string, srv *proc.Server, tr string, cfg Config) (cli meter.Client, err error) {
	loss := cfg.Loss
	switch system {
	case "erpc", "erpc-call", "erpc-udp", "erpc-nocc":
		opts := ErpcOptions(cfg.Busy, cfg.Window)
		if system == "erpc-nocc" {
			opts = append(opts, erpc.WithoutCongestionControl())
		}
		return newErpcClient(srv.Addr, tr, opts, loss, system != "erpc-call")
	case "raw-udp":
		return newRawUDPClient(srv.Addr, cfg.Busy, cfg.RawDgram, cfg.RawWindow)
	case "udp-floor", "udp-plain":
		return newUDPFloorClient(srv, system == "udp-plain")
	case "raw-shm":
		return newRawShmClient(srv)
	case "erpc-tls":
		return newErpcTLSClient(srv, cfg)
	case "grpc":
		return newGRPCClient(srv.Addr)
	case "grpc-tls":
		return newGRPCTLSClient(srv)
	case "quic", "quic-stream":
		return newQUICClient(srv, system == "quic-stream")
	case "netrpc":
		return newNetRPCClient(srv.Addr)
	case "drpc":
		return newDRPCClient(srv.Addr)
	}
	return nil, fmt.Errorf("unknown system %q", system)
}

// TransportOf names what a system runs over.
func TransportOf(system, erpcTransport string) string {
	switch system {
	case "erpc", "erpc-call", "erpc-nocc":
		return erpcTransport
	case "memcpy":
		return "mem"
	case "raw-udp", "udp-floor", "udp-plain", "erpc-udp", "erpc-tls", "quic", "quic-stream":
		return "udp"
	case "raw-shm":
		return "shm"
	}
	return "tcp"
}

// The servers of the systems under test; erpc-udp and erpc-nocc use
// erpc's.
func init() {
	proc.Register("erpc", newErpcServer)
	proc.Register("erpc-call", newErpcServer)
	proc.Register("raw-udp", newRawUDPServer)
	proc.Register("udp-floor", newUDPFloorServer)
	proc.Register("udp-plain", newUDPFloorServer)
	proc.Register("raw-shm", newRawShmServer)
	proc.Register("grpc", newGRPCServer)
	proc.Register("grpc-tls", newGRPCTLSServer)
	proc.Register("erpc-tls", newErpcTLSServer)
	proc.Register("quic", newQUICServer)
	proc.Register("netrpc", newNetRPCServer)
	proc.Register("drpc", newDRPCServer)
}
