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
	ip4Dst    = 14 + 16
	ip4UDPDst = 14 + 20 + 2
	ip6Next   = 14 + 6
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
// options and unfragmented, or IPv6 without extension headers) goes to
// the AF_XDP socket of the queue it arrived on, through xsks; everything
// else goes to the kernel. Every load is preceded by the bounds check the
// verifier demands (data + the headers' length <= data_end).
// The action when the queue has no socket is fallback (xdpPass; tests
// use another, to tell a redirect from a pass).
func program(xsks *ebpf.Map, addr netip.AddrPort, fallback int32) asm.Instructions {
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
func attach(ifindex, queues int, addr netip.AddrPort, force string) (*attached, error) {
	a, err := load(queues, addr, xdpPass)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, m := range []struct {
		name  string
		flags link.XDPAttachFlags
	}{{"native", link.XDPDriverMode}, {"generic", link.XDPGenericMode}} {
		if force != "" && force != m.name {
			continue
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: a.prog, Interface: ifindex, Flags: m.flags})
		if err == nil {
			a.link, a.mode = l, m.name
			return a, nil
		}
		errs = append(errs, fmt.Errorf("%s mode: %w", m.name, err))
	}
	a.close()
	return nil, classify(fmt.Errorf("%w: %w", ErrNotAttachable, errors.Join(errs...)))
}

// load creates the socket map and loads the program (not attached yet).
func load(queues int, addr netip.AddrPort, fallback int32) (*attached, error) {
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "erpc_xsks", Type: ebpf.XSKMap,
		KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues),
	})
	if err != nil {
		return nil, classify(fmt.Errorf("creating the XSKMAP: %w", err))
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "erpc_xdp", Type: ebpf.XDP, License: "Dual MIT/GPL",
		Instructions: program(xsks, addr, fallback),
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
