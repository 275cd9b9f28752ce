package systems

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/xdp"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// Veth is a pair of network namespaces joined by veth (scenario's
// -transport xdp): with UseVeth, the servers of erpc, erpc-call, erpc-udp
// and raw-udp run in ServerNS on ServerAddr and their clients in ClientNS
// on ClientAddr, on the interface Ifname (its name in both), instead of
// on loopback. Transport "xdp" then puts erpc on AF_XDP at both ends.
type Veth struct {
	ServerNS, ClientNS     string
	ServerAddr, ClientAddr netip.Addr
	Ifname                 string
}

var veth *Veth

// UseVeth makes Start run the systems over v (nil: loopback again).
func UseVeth(v *Veth) { veth = v }

// VethSystems are the systems that can run over a Veth.
var VethSystems = []string{"erpc", "erpc-call", "erpc-udp", "raw-udp"}

// serverListen is the proc.Config.Listen of srvSys's server over the
// veth: "ifname/ip" for erpc over AF_XDP, the IP for the others (raw-udp
// is started with the -transport it runs beside, xdp).
func serverListen(srvSys, tr string) string {
	if tr == "xdp" && isErpcSystem(srvSys) {
		return veth.Ifname + "/" + veth.ServerAddr.String()
	}
	return veth.ServerAddr.String()
}

// XDPModeEnv, if set to "native" or "generic", forces where the XDP
// program runs (xdp.Options.AttachMode) in the servers and clients; the
// server processes inherit it.
const XDPModeEnv = "ERPC_BENCH_XDP_MODE"

// listenXDP opens an AF_XDP transport for listen ("ifname/ip").
func listenXDP(listen string) (transport.Transport, error) {
	ifname, ip, ok := strings.Cut(listen, "/")
	addr, err := netip.ParseAddr(ip)
	if !ok || err != nil {
		return nil, fmt.Errorf("xdp: listen address %q: want ifname/ip", listen)
	}
	return xdp.Listen(ifname, netip.AddrPortFrom(addr, 0), xdp.Options{AttachMode: os.Getenv(XDPModeEnv)})
}

// xdpOpts opens the AF_XDP transport of an erpc endpoint when tr is
// "xdp", and lets it send in plaintext to the veth's addresses.
func xdpOpts(tr, listen string, opts []erpc.Option) ([]erpc.Option, transport.Transport, error) {
	opts = append(opts[:len(opts):len(opts)], erpc.Insecure())
	if tr != "xdp" {
		return opts, nil, nil
	}
	t, err := listenXDP(listen)
	if err != nil {
		return nil, nil, err
	}
	return append(opts, erpc.WithTransport(t)), t, nil
}

// XDPMode is the AF_XDP mode of a peer's server ("native/copy", ...), or
// "" when it does not run over AF_XDP.
func XDPMode(p *Peer) string {
	if p.Srv == nil {
		return ""
	}
	m, err := p.Srv.Ctl("xdpmode")
	if err != nil {
		return ""
	}
	return m
}

// modeOf is a transport's AF_XDP mode, if it has one.
func modeOf(t transport.Transport) string {
	if m, ok := t.(interface{ Mode() string }); ok {
		return m.Mode()
	}
	return ""
}

// rawUDPListenIP is where raw-udp's server listens: the veth's address
// when given one, else loopback.
func rawUDPListenIP(cfg proc.Config) net.IP {
	if ip := net.ParseIP(cfg.Listen); ip != nil {
		return ip
	}
	return net.IPv4(127, 0, 0, 1)
}

func isErpcSystem(s string) bool { return s == "erpc" || s == "erpc-call" }
