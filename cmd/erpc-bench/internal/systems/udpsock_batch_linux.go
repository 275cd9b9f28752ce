package systems

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport/udp"
)

// message returns message i of the last batch and the GRO segment size
// its datagrams were coalesced with (0: one datagram).
func (s *udpSock) message(i int) (data []byte, seg int) {
	h := &s.rxHdrs[i]
	if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
		return nil, 0
	}
	off := i * sockRecvBuf
	data = s.rxBufs[off : off+int(h.Len)]
	ctrl := s.rxCtrl[i*sockRxCtrl : i*sockRxCtrl+int(h.Hdr.Controllen)]
	for len(ctrl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		n := int(c.Len)
		if n < unix.SizeofCmsghdr || n > len(ctrl) {
			break
		}
		if c.Level == unix.SOL_UDP && c.Type == unix.UDP_GRO && n >= unix.CmsgLen(4) {
			seg = int(*(*int32)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])))
			break
		}
		ctrl = ctrl[min(unix.CmsgSpace(n-unix.CmsgLen(0)), len(ctrl)):]
	}
	if seg >= len(data) {
		seg = 0
	}
	return data, seg
}

// replyTo makes sends go to the source of message i of the last batch.
func (s *udpSock) replyTo(i int) {
	s.to, s.tolen = s.rxNames[i], s.rxHdrs[i].Hdr.Namelen
}

// queue adds a datagram of head (at most sockHeadMax bytes, copied) and
// payload (referenced until flush) to the send batch, sending the batch
// first if it is full.
func (s *udpSock) queue(head, payload []byte) error {
	size := len(head) + len(payload)
	e := s.txEnd - 1
	// Join the current train: GSO, equal sizes (a shorter one ends it),
	// within one datagram's worth of bytes, as erpc's transport does.
	join := e >= 0 && s.gso && s.txSegs[e] < sockMaxSegs && size <= s.txSize[e] &&
		s.txTotal[e]+size <= udp.MaxDatagram && s.txTotal[e] == s.txSegs[e]*s.txSize[e]
	if !join {
		if s.txEnd == sockBatch {
			if err := s.flush(); err != nil {
				return err
			}
		}
		e = s.txEnd
		s.txEnd++
		s.txSegs[e], s.txSize[e], s.txTotal[e] = 0, size, 0
		h := &s.txHdrs[e].Hdr
		h.Iov = nil
		h.SetIovlen(0)
		h.Control = nil
		h.SetControllen(0)
		if s.tolen > 0 {
			h.Name = (*byte)(unsafe.Pointer(&s.to))
		} else {
			h.Name = nil
		}
		h.Namelen = s.tolen
	}
	k := len(s.txIovs) / 2
	hb := s.txHeads[k*sockHeadMax : k*sockHeadMax+len(head)]
	copy(hb, head)
	s.txIovs = append(s.txIovs, unix.Iovec{Base: &hb[0]})
	s.txIovs[len(s.txIovs)-1].SetLen(len(hb))
	if len(payload) > 0 {
		s.txIovs = append(s.txIovs, unix.Iovec{Base: &payload[0]})
		s.txIovs[len(s.txIovs)-1].SetLen(len(payload))
	} else {
		s.txIovs = append(s.txIovs, unix.Iovec{Base: &hb[0]}) // empty: keeps two per datagram
	}
	h := &s.txHdrs[e].Hdr
	if s.txSegs[e] == 0 {
		h.Iov = &s.txIovs[len(s.txIovs)-2]
	}
	s.txSegs[e]++
	s.txTotal[e] += size
	h.SetIovlen(2 * s.txSegs[e])
	if s.txSegs[e] > 1 {
		ctrl := s.txCtrl[e*sockTxCtrl : (e+1)*sockTxCtrl]
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		c.Level = unix.SOL_UDP
		c.Type = unix.UDP_SEGMENT
		c.SetLen(unix.CmsgLen(2))
		*(*uint16)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])) = uint16(s.txSize[e])
		h.Control = &ctrl[0]
		h.SetControllen(sockTxCtrl)
	}
	return nil
}

func (s *udpSock) sendOnce(fd uintptr) {
	s.txErr = 0
	for s.txDone < s.txEnd {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.txHdrs[s.txDone])),
			uintptr(s.txEnd-s.txDone), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			s.txDone += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			s.txErr = e
			return
		case unix.EIO, unix.EINVAL:
			if s.txSegs[s.txDone] > 1 {
				s.txErr = e // GSO refused
				return
			}
			s.txDone++
		default:
			// ENOBUFS, ECONNREFUSED: the datagram is lost, as on a network.
			s.txDone++
		}
	}
}

// flush sends the batch, waiting while the socket buffer is full.
func (s *udpSock) flush() error {
	defer func() {
		clear(s.txIovs)
		s.txIovs = s.txIovs[:0]
		s.txEnd, s.txDone = 0, 0
	}()
	for s.txDone < s.txEnd {
		s.sendOnce(s.fd)
		switch s.txErr {
		case 0:
		case unix.EAGAIN:
			if !s.busy {
				if err := s.waitWritable(); err != nil {
					return err
				}
			}
		default:
			// The kernel refused GSO: split the trains from now on.
			return errors.New("UDP GSO refused by the kernel; rerun where UDP_SEGMENT works")
		}
	}
	return nil
}
