// Package xdp is an erpc-go transport over AF_XDP (Linux): the kernel's
// UDP stack is bypassed for erpc's datagrams, which go between the network
// interface and the endpoint's event loop through rings in shared memory.
// It is a module of its own because it depends on github.com/cilium/ebpf,
// which the root module may not. Use it with erpc.WithTransport:
//
//	tr, err := xdp.Listen("eth0", netip.MustParseAddrPort("10.0.0.1:31850"), xdp.Options{})
//	ep, err := srv.Listen("", erpc.WithTransport(tr))
//
// Peers see a plain UDP endpoint ("udp://10.0.0.1:31850") and may use any
// transport; both ends over AF_XDP is fastest.
//
// # The XDP program
//
// Listen loads a small XDP program, written with cilium/ebpf's asm package
// (no C compiler at build time), and attaches it to the interface through
// a BPF link: natively in the driver where it can, else in generic (SKB)
// mode. It redirects an Ethernet frame holding a UDP datagram to the
// transport's IP and port (IPv4 without options and unfragmented, or IPv6
// without extension headers) to the AF_XDP socket of the receive queue it
// arrived on, through an XSKMAP (bpf_redirect_map, with XDP_PASS as the
// action when the queue has no socket), and passes every other frame to
// the kernel: ARP, NDP, ICMP, other ports. It also passes, to be judged by
// the kernel as it judges any frame, datagrams to the transport's port
// that the transport should not take itself: those to another
// destination MAC (another host's, broadcast), those from a martian
// source (loopback, multicast, broadcast, unspecified, the transport's
// own IP), and in generic mode those whose UDP checksum field holds only
// the pseudo header's sum, which marks a checksum left to an offload: there
// a kernel sender's GSO train over veth reaches the program as one
// super-frame, and the kernel socket gets it segmented. (Native XDP on
// veth turns the peer's GSO off; the parser takes such a checksum as the
// kernel does for a local sender's datagram.) The link is closed with the
// transport, and by the kernel if the process dies.
//
// A kernel UDP socket bound to the same address holds the port (and picks
// one for port 0); what the program passes to the kernel for that port (a
// fragmented datagram, say) arrives on it, and Receive delivers it too, on
// a slower path read when Wait sees it readable and every 256 Receives.
//
// # Sockets, UMEM and rings
//
// Each receive queue gets an AF_XDP socket with its own UMEM of 4096
// frames of 2 KiB (8 MiB) and four rings of 2048 entries mapped from the
// kernel: fill and RX for receiving, TX and completion for sending. Each
// ring has one producer and one consumer, which publish their indexes
// with atomic stores after touching the entries.
//
// Frame ownership: the first half of the UMEM belongs to the kernel for
// receiving. The kernel takes a frame from the fill ring, writes a frame
// into it and hands it back through the RX ring; Receive passes the UDP
// payload to the engine as a slice of that frame, without copying (the
// transport interface says data is valid only until fn returns), and puts
// the frame back on the fill ring once fn has returned. The second half
// belongs to Send: a free list of TX frames, from which it builds a
// datagram's Ethernet, IP and UDP headers and copies Head and Payload
// (the interface lets the caller reuse them at once), queues the frame on
// the TX ring, and takes it back from the completion ring once sent.
//
// Send builds the whole frame: the interface's MAC as source, and as
// destination the MAC the kernel's neighbour table holds for the route's
// next hop. ARP and NDP stay the kernel's, and the event loop never waits
// for them: a resolver goroutine owns a netlink socket opened by Listen
// (so in Listen's network namespace) and reads routes and neighbours
// (RTM_GETROUTE, RTM_GETNEIGH) when the loop asks, without blocking, about
// a new peer or one whose MAC is 30 s old (the old MAC is used meanwhile).
// For a next hop the kernel has not resolved, the resolver has it resolve
// one (an empty datagram to the next hop's discard port through a kernel
// socket) and waits for it up to a second; meanwhile Send sends to that
// peer through the kernel UDP socket, which queues while the kernel
// resolves. A peer the kernel could not resolve is dropped for a backoff
// that doubles from 1 s to 30 s. The kernel checks a neighbour entry only
// when it sends through it, which AF_XDP bypasses, so the resolver checks
// the MAC of each next hop in use every 15 s by setting its entry to
// PROBE (the kernel's unicast probes: REACHABLE if the MAC answers, else
// FAILED and resolved again), and tells the loop when a MAC changed; the
// loop also takes a peer on the link's MAC from its valid frames. A
// refresh allocates nothing. The IPv4 header checksum and the UDP
// checksum are computed; received UDP checksums are checked as the kernel
// checks them (0 means none over IPv4, and is refused over IPv6). Send
// reads the MTU again (at most every 10 ms, when a datagram is larger
// than what fits 1280) and refuses what no longer fits with ErrTooLarge.
//
// # Copy and zero copy, native and generic
//
// Listen binds in zero-copy mode where the driver supports it (the NIC
// then writes frames straight into the UMEM) and in copy mode elsewhere,
// where the kernel copies each frame between the UMEM and its own
// buffers. veth has no zero copy: over veth the program runs natively
// (veth has native XDP) and the sockets copy, "native/copy", which is
// what the tests and the benchmark measure. Mode reports it. The sockets
// ask the kernel to say when it needs a system call (XDP_USE_NEED_WAKEUP):
// in copy mode every Send makes one sendto to have the kernel transmit
// (it sends only from inside that call), in zero-copy mode only when the
// TX ring asks for it.
//
// # The event loop
//
// Receive drains every RX ring without a system call. Wait sleeps in
// ppoll on the sockets, the kernel socket and an eventfd that Wake
// writes (once between two Waits; Wait reads the eventfd before it clears
// that mark, so no Wake is lost). The transport is a transport.Poller
// whose check is a load of each RX ring's producer index, so a
// busy-polling endpoint (erpc.WithBusyPoll) spins on the rings. Close may
// come from any goroutine: it wakes a Wait, and the rings are unmapped
// and the descriptors closed only once no call is in progress (Receive,
// Send, Wait, Poll, Wake), by Close or by the last call to return. From
// the loop's own fn inside Receive, Close marks the transport closed and
// returns; the release happens as that Receive returns. A Wake after
// Close does nothing.
//
// # Requirements and failures
//
// AF_XDP needs Linux 5.9 or later (BPF links for XDP), root or
// CAP_NET_ADMIN (to attach the program), CAP_BPF (CAP_SYS_ADMIN before
// 5.8; to load it) and CAP_NET_RAW (for AF_XDP sockets), and room for the
// UMEM (8 MiB a receive queue) under RLIMIT_MEMLOCK unless the process has
// CAP_IPC_LOCK, and an interface that takes an XDP program (any does in
// generic mode). Listen fails with an error matching ErrPermission (which
// names the missing capability; ErrMemlock too when the memlock limit is
// what is missing), ErrNoInterface, ErrNotAttachable (ErrInUse too when
// the interface has a program already) or ErrKernel that names the system
// call and the kernel's answer; with Options.FallbackUDP it returns a UDP
// transport instead and logs why. Queues past the first that refuse a
// socket are left to the kernel socket.
// One AF_XDP transport per interface (an interface takes one XDP program
// through a link). Datagrams are limited to the MTU (MaxDatagram, 1472
// bytes over IPv4 on a 1500-byte Ethernet); the endpoint uses that as
// its packet size (PacketSize).
package xdp
