//go:build linux

package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rtnl is a NETLINK_ROUTE socket opened in the namespace Listen ran in,
// so that the resolver, on whatever thread, reads that namespace's routes
// and neighbours. Its requests and replies use buffers of its own and raw
// system calls: a periodic refresh allocates nothing.
type rtnl struct {
	fd  int
	seq uint32
	req [128]byte
	buf []byte
}

func openRtnl() (*rtnl, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	return &rtnl{fd: fd, buf: make([]byte, 64<<10)}, nil
}

func (r *rtnl) close() { unix.Close(r.fd) }

// request starts a message of typ and flags with a type header of hdr
// bytes (zeroed) in r.req, and returns the header's bytes.
func (r *rtnl) request(typ, flags uint16, hdr int) []byte {
	r.seq++
	clear(r.req[:])
	binary.NativeEndian.PutUint32(r.req[0:], uint32(unix.SizeofNlMsghdr+hdr))
	binary.NativeEndian.PutUint16(r.req[4:], typ)
	binary.NativeEndian.PutUint16(r.req[6:], flags)
	binary.NativeEndian.PutUint32(r.req[8:], r.seq)
	return r.req[unix.SizeofNlMsghdr : unix.SizeofNlMsghdr+hdr]
}

// addAttr appends a route attribute to the message in r.req.
func (r *rtnl) addAttr(typ uint16, val []byte) {
	n := int(binary.NativeEndian.Uint32(r.req[0:]))
	l := 4 + len(val)
	binary.NativeEndian.PutUint16(r.req[n:], uint16(l))
	binary.NativeEndian.PutUint16(r.req[n+2:], typ)
	copy(r.req[n+4:], val)
	binary.NativeEndian.PutUint32(r.req[0:], uint32(n+(l+3)&^3))
}

// exchange sends the message in r.req to the kernel and passes each
// message of the answer to fn, until the dump ends or the kernel acks.
func (r *rtnl) exchange(fn func(typ uint16, body []byte)) error {
	n := binary.NativeEndian.Uint32(r.req[0:])
	if _, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.fd), uintptr(unsafe.Pointer(&r.req[0])), uintptr(n), 0, 0, 0); e != 0 {
		return fmt.Errorf("netlink send: %w", e)
	}
	for {
		m, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(r.fd), uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)), 0, 0, 0)
		if e != 0 {
			return fmt.Errorf("netlink receive: %w", e)
		}
		for b := r.buf[:m]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return fmt.Errorf("netlink: a message of %d bytes in %d", l, len(b))
			}
			typ, seq, body := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint32(b[8:]), b[unix.SizeofNlMsghdr:l]
			b = b[min((l+3)&^3, len(b)):]
			if seq != r.seq {
				continue
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(body) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(body)); e != 0 {
						return fmt.Errorf("netlink: %w", unix.Errno(-e))
					}
				}
				return nil
			}
			fn(typ, body)
		}
	}
}

// dump asks for a dump of typ (RTM_GETLINK, RTM_GETROUTE, RTM_GETNEIGH)
// of family and passes each message's type and body to fn.
func (r *rtnl) dump(typ uint16, family uint8, fn func(typ uint16, body []byte)) error {
	// The type's header (ifinfomsg, rtmsg, ndmsg), of which a dump
	// request sets only the family.
	hdr := unix.SizeofIfInfomsg
	switch typ {
	case unix.RTM_GETROUTE:
		hdr = unix.SizeofRtMsg
	case unix.RTM_GETNEIGH:
		hdr = unix.SizeofNdMsg
	}
	r.request(typ, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, hdr)[0] = family
	return r.exchange(fn)
}

// attrs passes each route attribute in b (after a header of skip bytes)
// to fn.
func attrs(b []byte, skip int, fn func(typ uint16, val []byte)) {
	if len(b) < skip {
		return
	}
	b = b[skip:]
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		if l < 4 || l > len(b) {
			return
		}
		fn(binary.NativeEndian.Uint16(b[2:])&0x3fff, b[4:l])
		b = b[min((l+3)&^3, len(b)):]
	}
}

// rxQueues is the interface's number of receive queues (IFLA_NUM_RX_QUEUES).
func (r *rtnl) rxQueues(ifindex int) (int, error) {
	queues := 0
	err := r.dump(unix.RTM_GETLINK, unix.AF_UNSPEC, func(typ uint16, body []byte) {
		if typ != unix.RTM_NEWLINK || len(body) < unix.SizeofIfInfomsg {
			return
		}
		info := (*unix.IfInfomsg)(unsafe.Pointer(&body[0]))
		if int(info.Index) != ifindex {
			return
		}
		attrs(body, unix.SizeofIfInfomsg, func(t uint16, v []byte) {
			if t == unix.IFLA_NUM_RX_QUEUES && len(v) >= 4 {
				queues = int(binary.NativeEndian.Uint32(v))
			}
		})
	})
	return max(queues, 1), err
}

// nextHop is the address whose MAC a datagram to dst goes to on the
// interface: the gateway of the longest matching route in the main table
// through it, or dst itself when that route has no gateway or none matches.
func (r *rtnl) nextHop(ifindex int, dst netip.Addr) (netip.Addr, error) {
	family := uint8(unix.AF_INET6)
	if dst.Is4() {
		family = unix.AF_INET
	}
	best, hop := -1, dst
	err := r.dump(unix.RTM_GETROUTE, family, func(typ uint16, body []byte) {
		if typ != unix.RTM_NEWROUTE || len(body) < unix.SizeofRtMsg {
			return
		}
		rt := (*unix.RtMsg)(unsafe.Pointer(&body[0]))
		if rt.Type != unix.RTN_UNICAST || int(rt.Dst_len) <= best {
			return
		}
		table, oif := uint32(rt.Table), -1
		var prefix, gw netip.Addr
		attrs(body, unix.SizeofRtMsg, func(t uint16, v []byte) {
			switch t {
			case unix.RTA_TABLE:
				if len(v) >= 4 {
					table = binary.NativeEndian.Uint32(v)
				}
			case unix.RTA_OIF:
				if len(v) >= 4 {
					oif = int(binary.NativeEndian.Uint32(v))
				}
			case unix.RTA_DST:
				prefix, _ = netip.AddrFromSlice(v)
			case unix.RTA_GATEWAY:
				gw, _ = netip.AddrFromSlice(v)
			}
		})
		if table != unix.RT_TABLE_MAIN || oif != ifindex {
			return
		}
		if rt.Dst_len > 0 {
			p, err := prefix.Prefix(int(rt.Dst_len))
			if err != nil || !p.Contains(dst) {
				return
			}
		}
		best, hop = int(rt.Dst_len), dst
		if gw.IsValid() {
			hop = gw
		}
	})
	return hop, err
}

// neighbour is the MAC the kernel's neighbour table holds for ip on the
// interface, if it holds a usable one, and the entry's state (NUD_*).
func (r *rtnl) neighbour(ifindex int, ip netip.Addr) (mac [6]byte, state uint16, ok bool, err error) {
	family := uint8(unix.AF_INET6)
	if ip.Is4() {
		family = unix.AF_INET
	}
	const usable = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT | unix.NUD_NOARP
	err = r.dump(unix.RTM_GETNEIGH, family, func(typ uint16, body []byte) {
		if typ != unix.RTM_NEWNEIGH || len(body) < unix.SizeofNdMsg || ok {
			return
		}
		nd := (*unix.NdMsg)(unsafe.Pointer(&body[0]))
		if int(nd.Ifindex) != ifindex {
			return
		}
		var dst netip.Addr
		var ll []byte
		attrs(body, unix.SizeofNdMsg, func(t uint16, v []byte) {
			switch t {
			case unix.NDA_DST:
				dst, _ = netip.AddrFromSlice(v)
			case unix.NDA_LLADDR:
				ll = v
			}
		})
		if dst != ip {
			return
		}
		state = nd.State
		if nd.State&usable != 0 && len(ll) == 6 {
			mac, ok = [6]byte(ll), true
		}
	})
	return mac, state, ok, err
}

// setNeighbourState sets the state of the kernel's entry for ip (which
// holds mac) to state, as "ip neigh change ... nud probe" does: NUD_PROBE
// has the kernel check with unicast probes that mac still answers, and
// mark the entry FAILED when it does not.
func (r *rtnl) setNeighbourState(ifindex int, ip netip.Addr, mac [6]byte, state uint16) error {
	nd := r.request(unix.RTM_NEWNEIGH, unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_REPLACE, unix.SizeofNdMsg)
	m := (*unix.NdMsg)(unsafe.Pointer(&nd[0]))
	m.Family, m.Ifindex, m.State = unix.AF_INET6, int32(ifindex), state
	if ip.Is4() {
		m.Family = unix.AF_INET
		a := ip.As4()
		r.addAttr(unix.NDA_DST, a[:])
	} else {
		a := ip.As16()
		r.addAttr(unix.NDA_DST, a[:])
	}
	r.addAttr(unix.NDA_LLADDR, mac[:])
	return r.exchange(func(uint16, []byte) {})
}
