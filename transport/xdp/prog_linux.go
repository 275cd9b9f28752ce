//go:build linux

package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Offsets in struct xdp_md, the XDP program's context.
const (
	mdData       = 0
	mdDataEnd    = 4
	mdRxQueueIdx = 16
)

// Offsets in a frame without VLAN tag or IPv4 options: the program only
// redirects such frames, and passes anything unusual to the kernel.
const (
	ethType   = 12
	ip4Proto  = 14 + 9
	ip4Frag   = 14 + 6
	ip4Src    = 14 + 12
	ip4Dst    = 14 + 16
	ip4UDPDst = 14 + 20 + 2
	ip6Next   = 14 + 6
	ip6Src    = 14 + 8
	ip6Dst    = 14 + 24
	ip6UDPDst = 14 + 40 + 2
)

// xdpPass is XDP_PASS: the action for everything that is not ours, and
// bpf_redirect_map's fallback when the queue has no socket in the map.
const xdpPass = 2

// le16 and le32 are the values a little- or big-endian load of the bytes
// of a network-order field gives on this machine: the program compares
// raw loads with them, so it never swaps bytes.
func le16(b [2]byte) int32 { return int32(binary.NativeEndian.Uint16(b[:])) }
func le32(b []byte) int32  { return int32(binary.NativeEndian.Uint32(b)) }

// program is the XDP program: a UDP datagram to addr (IPv4 without
// options and unfragmented, or IPv6 without extension headers) in a frame
// to mac goes to the AF_XDP socket of the queue it arrived on, through
// xsks; everything else goes to the kernel, which judges it as it judges
// any frame. So do frames the transport should not take itself:
//   - to another destination MAC (another host's, broadcast): the kernel
//     drops or takes them as it would for a UDP socket;
//   - from a martian source (loopback, multicast, broadcast, unspecified,
//     addr's own IP): the kernel drops them;
//   - in generic mode (passPartial), whose UDP checksum field holds only
//     the pseudo-header's sum, the mark of a checksum left to an offload
//     (CHECKSUM_PARTIAL): there a kernel sender's GSO train over veth
//     reaches the program as one super-frame, and the kernel socket gets
//     it segmented. (A complete checksum equals that sum once in 65536
//     datagrams, which then take the slow path, correctly.) Native XDP on
//     veth turns the peer's GSO off, so there such frames are single
//     datagrams, which the parser takes.
//
// Every load is preceded by the bounds check the verifier demands (data +
// the headers' length <= data_end). The action when the queue has no
// socket is fallback (xdpPass; tests use another, to tell a redirect from
// a pass).
func program(xsks *ebpf.Map, mac [6]byte, addr netip.AddrPort, passPartial bool, fallback int32) asm.Instructions {
	var port [2]byte
	binary.BigEndian.PutUint16(port[:], addr.Port())
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, mdDataEnd, asm.Word),
	}
	if a := addr.Addr(); a.Is4() {
		ip := a.As4()
		ins = append(ins,
			// data + 42 (Ethernet, IPv4, UDP headers) must not pass data_end.
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14+20+8),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethType, asm.Half),
			asm.JNE.Imm32(asm.R5, le16([2]byte{0x08, 0x00}), "pass"),
			asm.LoadMem(asm.R5, asm.R2, 14, asm.Byte),
			asm.JNE.Imm32(asm.R5, 0x45, "pass"), // IPv4, header of 20 bytes
			asm.LoadMem(asm.R5, asm.R2, ip4Proto, asm.Byte),
			asm.JNE.Imm32(asm.R5, 17, "pass"), // UDP
			asm.LoadMem(asm.R5, asm.R2, ip4Frag, asm.Half),
			asm.And.Imm32(asm.R5, le16([2]byte{0x3f, 0xff})), // more fragments, offset
			asm.JNE.Imm32(asm.R5, 0, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ip4Dst, asm.Word),
			asm.JNE.Imm32(asm.R5, le32(ip[:]), "pass"),
			asm.LoadMem(asm.R5, asm.R2, ip4UDPDst, asm.Half),
			asm.JNE.Imm32(asm.R5, le16(port), "pass"),
		)
		ins = append(ins, dstMAC(mac)...)
		ins = append(ins,
			// Martian sources: 0/8, 127/8, 224/4 and above, our own IP.
			asm.LoadMem(asm.R5, asm.R2, ip4Src, asm.Byte),
			asm.JEq.Imm(asm.R5, 0, "pass"),
			asm.JEq.Imm(asm.R5, 127, "pass"),
			asm.JGE.Imm(asm.R5, 224, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ip4Src, asm.Word),
			asm.JEq.Imm32(asm.R5, le32(ip[:]), "pass"),
		)
		if passPartial {
			ins = append(ins, partialChecksum(ip4Src, 8, ip4UDPDst+2, ip4UDPDst+4)...)
		}
	} else {
		ip := a.As16()
		ins = append(ins,
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14+40+8),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethType, asm.Half),
			asm.JNE.Imm32(asm.R5, le16([2]byte{0x86, 0xdd}), "pass"),
			asm.LoadMem(asm.R5, asm.R2, ip6Next, asm.Byte),
			asm.JNE.Imm32(asm.R5, 17, "pass"),
		)
		for i := 0; i < 16; i += 4 {
			ins = append(ins,
				asm.LoadMem(asm.R5, asm.R2, int16(ip6Dst+i), asm.Word),
				asm.JNE.Imm32(asm.R5, le32(ip[i:i+4]), "pass"),
			)
		}
		ins = append(ins,
			asm.LoadMem(asm.R5, asm.R2, ip6UDPDst, asm.Half),
			asm.JNE.Imm32(asm.R5, le16(port), "pass"),
		)
		ins = append(ins, dstMAC(mac)...)
		ins = append(ins, martian6(ip)...)
		if passPartial {
			ins = append(ins, partialChecksum(ip6Src, 32, ip6UDPDst+2, ip6UDPDst+4)...)
		}
	}
	return append(ins,
		// bpf_redirect_map(xsks, ctx->rx_queue_index, XDP_PASS)
		asm.LoadMem(asm.R2, asm.R6, mdRxQueueIdx, asm.Word),
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.Mov.Imm(asm.R3, fallback),
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	)
}

// dstMAC passes a frame whose destination MAC is not mac.
func dstMAC(mac [6]byte) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R5, asm.R2, 0, asm.Word),
		asm.JNE.Imm32(asm.R5, le32(mac[0:4]), "pass"),
		asm.LoadMem(asm.R5, asm.R2, 4, asm.Half),
		asm.JNE.Imm32(asm.R5, le16([2]byte(mac[4:6])), "pass"),
	}
}

// martian6 passes a frame from ff00::/8 (multicast), ::, ::1 or own.
func martian6(own [16]byte) asm.Instructions {
	ins := asm.Instructions{
		asm.LoadMem(asm.R5, asm.R2, ip6Src, asm.Byte),
		asm.JEq.Imm(asm.R5, 0xff, "pass"),
	}
	// :: and ::1: three zero words, then 0 or 1.
	for i := 0; i < 12; i += 4 {
		ins = append(ins,
			asm.LoadMem(asm.R5, asm.R2, int16(ip6Src+i), asm.Word),
			asm.JNE.Imm32(asm.R5, 0, "notlo"),
		)
	}
	ins = append(ins,
		asm.LoadMem(asm.R5, asm.R2, ip6Src+12, asm.Word),
		asm.JEq.Imm32(asm.R5, 0, "pass"),
		asm.JEq.Imm32(asm.R5, le32([]byte{0, 0, 0, 1}), "pass"),
		asm.Mov.Imm(asm.R5, 0).WithSymbol("notlo"),
	)
	for i := 0; i < 16; i += 4 {
		last := "pass"
		if i < 12 {
			last = "notown"
		}
		ins = append(ins, asm.LoadMem(asm.R5, asm.R2, int16(ip6Src+i), asm.Word))
		if i < 12 {
			ins = append(ins, asm.JNE.Imm32(asm.R5, le32(own[i:i+4]), last))
		} else {
			ins = append(ins, asm.JEq.Imm32(asm.R5, le32(own[i:i+4]), last))
		}
	}
	return append(ins, asm.Mov.Imm(asm.R5, 0).WithSymbol("notown"))
}

// partialChecksum passes a frame whose UDP checksum field (at sumOff)
// equals the pseudo-header's folded sum: the addresses (n bytes from
// addrOff), the protocol and the UDP length (at lenOff). Raw loads are
// summed as they are: a ones'-complement sum does not depend on the byte
// order, so the result compares with the raw field.
func partialChecksum(addrOff, n, lenOff, sumOff int16) asm.Instructions {
	ins := asm.Instructions{
		asm.Mov.Imm(asm.R7, le16([2]byte{0, 17})),
		asm.LoadMem(asm.R5, asm.R2, lenOff, asm.Half),
		asm.Add.Reg(asm.R7, asm.R5),
	}
	for i := int16(0); i < n; i += 2 {
		ins = append(ins,
			asm.LoadMem(asm.R5, asm.R2, addrOff+i, asm.Half),
			asm.Add.Reg(asm.R7, asm.R5),
		)
	}
	for range 2 { // fold the carries back in
		ins = append(ins,
			asm.Mov.Reg(asm.R8, asm.R7),
			asm.RSh.Imm(asm.R8, 16),
			asm.And.Imm(asm.R7, 0xffff),
			asm.Add.Reg(asm.R7, asm.R8),
		)
	}
	return append(ins,
		asm.LoadMem(asm.R5, asm.R2, sumOff, asm.Half),
		asm.JEq.Reg(asm.R5, asm.R7, "pass"),
	)
}

// attached is the program on the interface and its socket map.
type attached struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	link link.Link
	mode string // "native" or "generic"
}

// attach loads the program for addr with a socket map of queues entries
// and attaches it to the interface: natively (in the driver) if it can,
// else in generic (SKB) mode, unless force names one of them.
func attach(ifindex, queues int, mac [6]byte, addr netip.AddrPort, force string) (*attached, error) {
	var errs []error
	for _, m := range []struct {
		name  string
		flags link.XDPAttachFlags
	}{{"native", link.XDPDriverMode}, {"generic", link.XDPGenericMode}} {
		if force != "" && force != m.name {
			continue
		}
		a, err := load(queues, mac, addr, m.name == "generic", xdpPass)
		if err != nil {
			return nil, err
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: a.prog, Interface: ifindex, Flags: m.flags})
		if err == nil {
			a.link, a.mode = l, m.name
			return a, nil
		}
		a.close()
		errs = append(errs, fmt.Errorf("%s mode: %w", m.name, err))
	}
	err := errors.Join(errs...)
	if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
		// The interface holds a program already: it takes one per mode.
		return nil, fmt.Errorf("%w (%w): %w", ErrInUse, ErrNotAttachable, err)
	}
	return nil, classify(fmt.Errorf("%w: %w", ErrNotAttachable, err))
}

// load creates the socket map and loads the program (not attached yet).
func load(queues int, mac [6]byte, addr netip.AddrPort, passPartial bool, fallback int32) (*attached, error) {
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "erpc_xsks", Type: ebpf.XSKMap,
		KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues),
	})
	if err != nil {
		return nil, classify(fmt.Errorf("creating the XSKMAP: %w", err))
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "erpc_xdp", Type: ebpf.XDP, License: "Dual MIT/GPL",
		Instructions: program(xsks, mac, addr, passPartial, fallback),
	})
	if err != nil {
		xsks.Close()
		return nil, classify(fmt.Errorf("loading the XDP program: %w", err))
	}
	return &attached{xsks: xsks, prog: prog}, nil
}

func (a *attached) close() {
	if a.link != nil {
		a.link.Close()
	}
	a.prog.Close()
	a.xsks.Close()
}
