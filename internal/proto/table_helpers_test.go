package proto

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/internal/wire"
)

var (
	clientAddr = addr("10.0.0.2:7")
	serverAddr = addr("10.0.0.1:9")
)

// pkt builds a datagram from a header and payload.
func pkt(h wire.Header, payload []byte) []byte {
	return append(wire.AppendHeader(nil, &h), payload...)
}

// out is an expected outgoing packet: the header fields that matter, and
// the payload length (-1: do not check).
type out struct {
	Type    wire.Type
	Flags   wire.Flags
	Code    uint8
	ReqNum  uint64
	Idx     uint32
	Seq     uint32
	MsgSize uint32
	Len     int
}

func (o out) String() string {
	return fmt.Sprintf("%v{flags %d code %d req %d idx %d seq %d size %d len %d}",
		o.Type, o.Flags, o.Code, o.ReqNum, o.Idx, o.Seq, o.MsgSize, o.Len)
}

// decode turns engine output into comparable outs, checking addressing.
func decode(t *testing.T, pkts []Packet, to netip.AddrPort, session, token uint32) []out {
	t.Helper()
	var got []out
	for _, p := range pkts {
		var h wire.Header
		payload, err := h.Parse(p.AppendTo(nil))
		if err != nil {
			t.Fatalf("engine sent an unparsable packet: %v", err)
		}
		if p.To != to || h.Token != token || (h.Session != session && h.Type != wire.TypeReset) {
			t.Fatalf("%v sent to %v session %d token %x; want %v session %d token %x",
				h.Type, p.To, h.Session, h.Token, to, session, token)
		}
		got = append(got, out{h.Type, h.Flags, h.Code, h.ReqNum, h.PktIndex, h.TxSeq, h.MsgSize, len(payload)})
	}
	return got
}

func checkOut(t *testing.T, what string, got, want []out) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: sent %v, want %v", what, got, want)
	}
	for i := range want {
		w := want[i]
		g := got[i]
		if w.Len < 0 {
			g.Len = -1
		}
		if g != w {
			t.Fatalf("%s: packet %d is %v, want %v\nall: %v", what, i, g, w, got)
		}
	}
}

// drainEvents returns the engine's pending events as "type" strings plus
// the events themselves.
func drainEvents(e *Engine) (names []string, evs []Event) {
	for {
		ev, ok := e.NextEvent()
		if !ok {
			return names, evs
		}
		names = append(names, ev.Type.String())
		evs = append(evs, ev)
	}
}

func checkEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: events %v, want %v", what, got, want)
	}
}
