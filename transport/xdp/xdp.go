package xdp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// Options tunes an AF_XDP transport; the zero value is the default.
type Options struct {
	// FallbackUDP makes Listen return a plain UDP transport on addr
	// (udp.Listen) when AF_XDP cannot run here, with one log line (slog,
	// level Warn) saying why, instead of failing.
	FallbackUDP bool

	// AttachMode forces where the XDP program runs: "native" (in the
	// driver) or "generic" (SKB mode, any driver, slower). Default: native
	// if the driver takes it, else generic.
	AttachMode string

	// CopyOnly binds the sockets in copy mode even where the driver
	// offers zero copy.
	CopyOnly bool

	// Logger receives the fallback's log line (default slog.Default()).
	Logger *slog.Logger
}

// Why Listen failed; match them with errors.Is. The error itself says
// more (the system call that failed, the interface, the kernel's words).
var (
	// ErrPermission: the process is not root and lacks CAP_NET_ADMIN,
	// CAP_BPF (CAP_SYS_ADMIN on kernels before 5.8) or CAP_NET_RAW, or
	// the memlock limit is too low (then the error matches ErrMemlock
	// too). The error names what is missing.
	ErrPermission = errors.New("xdp: needs root, or CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW")
	// ErrMemlock: the UMEM (8 MiB a socket) does not fit RLIMIT_MEMLOCK;
	// raise the limit or grant CAP_IPC_LOCK.
	ErrMemlock = errors.New("xdp: RLIMIT_MEMLOCK too low for the UMEM")
	// ErrInUse: the interface already has an XDP program attached (another
	// AF_XDP transport, or another program); the error matches
	// ErrNotAttachable too.
	ErrInUse = errors.New("xdp: another XDP program is attached to the interface")
	// ErrNoInterface: no interface of that name, or it has no address
	// of addr's family.
	ErrNoInterface = errors.New("xdp: no such interface")
	// ErrNotAttachable: the interface takes no XDP program in native or
	// generic mode.
	ErrNotAttachable = errors.New("xdp: cannot attach an XDP program to the interface")
	// ErrKernel: the kernel lacks AF_XDP, BPF links or XSKMAP (Linux 5.9
	// or later is needed), or this is not Linux.
	ErrKernel = errors.New("xdp: the kernel lacks AF_XDP support (needs Linux 5.9 or later)")
)

// Listen opens an AF_XDP transport for addr on the interface ifname: an
// XDP program on the interface sends the UDP datagrams to addr to AF_XDP
// sockets, one per receive queue, and everything else on to the kernel.
// addr's IP must be one of the interface's; an unspecified IP takes the
// interface's first address of that family, port 0 a free port. Peers
// see a UDP endpoint: they dial "udp://ip:port" with any transport.
//
// Pass the result to erpc.Listen with erpc.WithTransport:
//
//	tr, err := xdp.Listen("eth0", netip.MustParseAddrPort("10.0.0.1:31850"), xdp.Options{})
//	ep, err := erpc.Listen("", erpc.WithTransport(tr), ...)
//
// It needs Linux 5.9 or later and root, or CAP_NET_ADMIN, CAP_BPF and
// CAP_NET_RAW with CAP_IPC_LOCK or an RLIMIT_MEMLOCK with room for the
// UMEM (8 MiB a receive queue).
// When it cannot run it fails with an error matching ErrPermission,
// ErrNoInterface, ErrNotAttachable or ErrKernel, or, with
// Options.FallbackUDP, returns a UDP transport instead.
func Listen(ifname string, addr netip.AddrPort, opts Options) (transport.Transport, error) {
	t, err := listen(ifname, addr, opts)
	if err == nil {
		return t, nil
	}
	if !opts.FallbackUDP {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	u, uerr := udp.Listen(addr.String(), udp.Options{})
	if uerr != nil {
		return nil, fmt.Errorf("%w (and the UDP fallback failed: %w)", err, uerr)
	}
	log.Warn("xdp: AF_XDP unavailable, using UDP", "interface", ifname, "addr", u.LocalAddr().String(), "reason", err.Error())
	return u, nil
}
