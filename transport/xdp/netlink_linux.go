//go:build linux

package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rtnl is a NETLINK_ROUTE socket opened in the namespace Listen ran in,
// so that the event loop, on whatever thread, reads that namespace's
// routes and neighbours.
type rtnl struct {
	fd  int
	seq uint32
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

// dump asks for a dump of typ (RTM_GETLINK, RTM_GETROUTE, RTM_GETNEIGH)
// of family and passes each message's type and body to fn.
func (r *rtnl) dump(typ uint16, family uint8, fn func(typ uint16, body []byte)) error {
	r.seq++
	// nlmsghdr, then the type's header (ifinfomsg, rtmsg, ndmsg) of which
	// a dump request sets only the family.
	hdr := unix.SizeofIfInfomsg
	switch typ {
	case unix.RTM_GETROUTE:
		hdr = unix.SizeofRtMsg
	case unix.RTM_GETNEIGH:
		hdr = unix.SizeofNdMsg
	}
	req := make([]byte, unix.SizeofNlMsghdr+hdr)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], typ)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], r.seq)
	req[unix.SizeofNlMsghdr] = family
	if err := unix.Sendto(r.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(r.fd, r.buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
		if err != nil {
			return fmt.Errorf("netlink parse: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != r.seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return fmt.Errorf("netlink: %w", unix.Errno(-e))
					}
				}
				return nil
			}
			fn(m.Header.Type, m.Data)
		}
	}
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
// interface, if it holds a usable one.
func (r *rtnl) neighbour(ifindex int, ip netip.Addr) (mac [6]byte, ok bool, err error) {
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
		if int(nd.Ifindex) != ifindex || nd.State&usable == 0 {
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
		if dst == ip && len(ll) == 6 {
			mac, ok = [6]byte(ll), true
		}
	})
	return mac, ok, err
}
