//go:build linux

package xdp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/erpc-go/erpc/transport"
	"golang.org/x/sys/unix"
)

func listen(ifname string, addr netip.AddrPort, opts Options) (transport.Transport, error) {
	if err := checkCaps(); err != nil {
		return nil, err
	}
	switch opts.AttachMode {
	case "", "native", "generic":
	default:
		return nil, fmt.Errorf("xdp: AttachMode %q (want native or generic)", opts.AttachMode)
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrNoInterface, ifname, err)
	}
	local, err := localAddr(ifc, addr)
	if err != nil {
		return nil, err
	}
	t := &Transport{ifindex: ifc.Index, efd: -1, probe: -1, kernel: -1, neigh: map[netip.Addr]neighEntry{}, released: make(chan struct{})}
	copy(t.link.src[:], ifc.HardwareAddr)
	if err := t.open(ifc, local, opts); err != nil {
		t.teardown()
		return nil, err
	}
	return t, nil
}

// open reserves the port with a kernel socket (which also picks one for
// port 0, and carries the datagrams to a peer whose MAC the kernel is
// resolving), attaches the program, opens a socket per receive queue and
// starts the resolver.
func (t *Transport) open(ifc *net.Interface, local netip.AddrPort, opts Options) error {
	var err error
	if t.kernel, t.local, err = openKernelSocket(local); err != nil {
		return err
	}
	t.kernelBuf, t.kernelOut = make([]byte, 1<<16), make([]byte, 1<<16)
	t.maxDatagram.Store(int32(maxDatagramFor(ifc.MTU, local.Addr())))
	t.safeDatagram = maxDatagramFor(1280, local.Addr())
	if t.ifr, err = unix.NewIfreq(ifc.Name); err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	if t.nl, err = openRtnl(); err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	queues, err := t.nl.rxQueues(t.ifindex)
	if err != nil {
		return fmt.Errorf("xdp: reading %s's queues: %w", ifc.Name, err)
	}
	family := unix.AF_INET
	if local.Addr().Is6() {
		family = unix.AF_INET6
	}
	if t.probe, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0); err != nil {
		return fmt.Errorf("xdp: probe socket: %w", err)
	}
	if t.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fmt.Errorf("xdp: eventfd: %w", err)
	}
	t.res = newResolver(t.nl, t.ifindex, t.probe, t.signal)
	go t.res.run()
	if t.prog, err = attach(t.ifindex, queues, t.link.src, t.local, opts.AttachMode); err != nil {
		return fmt.Errorf("%w (interface %s)", err, ifc.Name)
	}
	for q := range queues {
		x, err := openXSK(t.ifindex, q, opts.CopyOnly)
		if q > 0 && err != nil {
			// IFLA_NUM_RX_QUEUES counts the queues allocated, and veth
			// allocates one per CPU but uses one: the rest refuse a bind.
			// A queue without a socket (this one, or one the memlock limit
			// has no room for) passes its frames to the kernel socket:
			// slower, not lost.
			break
		}
		if err != nil {
			return classify(fmt.Errorf("xdp: AF_XDP socket on %s queue %d: %w", ifc.Name, q, err))
		}
		t.xsks = append(t.xsks, x)
		if err := t.prog.xsks.Update(uint32(q), uint32(x.fd), ebpf.UpdateAny); err != nil {
			return classify(fmt.Errorf("xdp: adding the socket of queue %d to the XSKMAP: %w", q, err))
		}
	}
	t.pollfds = make([]unix.PollFd, 0, len(t.xsks)+2)
	t.pollfds = append(t.pollfds, unix.PollFd{Fd: int32(t.efd), Events: unix.POLLIN},
		unix.PollFd{Fd: int32(t.kernel), Events: unix.POLLIN})
	for _, x := range t.xsks {
		t.pollfds = append(t.pollfds, unix.PollFd{Fd: int32(x.fd), Events: unix.POLLIN})
	}
	t.mode = t.prog.mode + "/copy"
	if t.xsks[0].zeroCopy {
		t.mode = t.prog.mode + "/zerocopy"
	}
	return nil
}

// localAddr is addr with an unspecified IP replaced by the interface's
// first address of its family; a given IP must be the interface's.
func localAddr(ifc *net.Interface, addr netip.AddrPort) (netip.AddrPort, error) {
	addrs, err := ifc.Addrs()
	if err != nil {
		return addr, fmt.Errorf("%w: %s's addresses: %w", ErrNoInterface, ifc.Name, err)
	}
	want := addr.Addr().Unmap()
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := p.Addr().Unmap()
		switch {
		case want.IsValid() && !want.IsUnspecified() && ip == want,
			(!want.IsValid() || want.IsUnspecified()) && (ip.Is4() == (!want.IsValid() || want.Is4())) && !ip.IsLinkLocalUnicast():
			return netip.AddrPortFrom(ip, addr.Port()), nil
		}
	}
	return addr, fmt.Errorf("%w: %s has no address %v", ErrNoInterface, ifc.Name, addr.Addr())
}

// checkCaps fails with ErrPermission unless the process is root or has
// CAP_NET_ADMIN (to attach the program), CAP_BPF (or CAP_SYS_ADMIN, which
// kernels before 5.8 want instead) to load it, and CAP_NET_RAW (for
// AF_XDP sockets); the error names what is missing. Without CAP_IPC_LOCK
// the UMEM counts against RLIMIT_MEMLOCK: see raiseMemlock.
func checkCaps() error {
	if os.Geteuid() == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil // cannot tell: let the system calls say
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil
			}
			const netAdmin, netRaw, sysAdmin, bpf = 1 << 12, 1 << 13, 1 << 21, 1 << 39
			var missing []string
			if caps&netAdmin == 0 {
				missing = append(missing, "CAP_NET_ADMIN")
			}
			if caps&(bpf|sysAdmin) == 0 {
				missing = append(missing, "CAP_BPF")
			}
			if caps&netRaw == 0 {
				missing = append(missing, "CAP_NET_RAW")
			}
			if len(missing) > 0 {
				return fmt.Errorf("%w: missing %s (uid %d, effective capabilities %#x)", ErrPermission, strings.Join(missing, ", "), os.Geteuid(), caps)
			}
		}
	}
	return nil
}

// memlockError is the error of a UMEM registration the memlock limit has
// no room for (ENOBUFS): it names the limit and what lifts it.
func memlockError(err error) error {
	var lim unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim)
	return fmt.Errorf("%w (%w): a UMEM of %d MiB does not fit RLIMIT_MEMLOCK (%d KiB); raise it (ulimit -l) or grant CAP_IPC_LOCK: %w",
		ErrMemlock, ErrPermission, numFrames*frameSize>>20, lim.Cur>>10, err)
}

// classify adds the sentinel that says why a system call failed, when it
// is not there yet: permission, or a kernel without the feature.
func classify(err error) error {
	switch {
	case errors.Is(err, ErrPermission), errors.Is(err, ErrKernel), errors.Is(err, ErrNotAttachable):
		return err
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %w", ErrPermission, err)
	case errors.Is(err, unix.EAFNOSUPPORT), errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: %w", ErrKernel, err)
	}
	return err
}
