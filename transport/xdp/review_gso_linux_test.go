//go:build linux

package xdp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestReviewGenericModeUDPPeerTrain: promise 1 says the transport passes
// over veth with AF_XDP at either end in native and generic mode, and
// promise 2 that it interoperates with plain-UDP peers. erpc's own UDP
// transport sends a run of equal-sized datagrams to one peer as one GSO
// train (UDP_SEGMENT). Over veth a GSO skb crosses unsegmented; native XDP
// on veth turns GSO off on the peer, generic XDP does not, so in generic
// mode the XDP program sees the whole train as one frame. Here the kernel
// UDP peer in B sends trains of equal datagrams (seeded sizes and counts)
// to a generic-mode AF_XDP transport in A, which must receive each
// datagram intact and separately: the same exchange against native mode
// is the control.
func TestReviewGenericModeUDPPeerTrain(t *testing.T) {
	for _, mode := range []string{"native", "generic"} {
		t.Run(mode, func(t *testing.T) {
			p := newVethPair(t)
			a := listenXDP(t, p, p.A, p.AddrA, Options{AttachMode: mode})
			b := listenUDP(t, p.B, p.AddrB)
			r := rand.New(rand.NewPCG(11, 12))
			// Warm up: one datagram each way so that the MACs are known.
			if err := b.Send([]transport.Message{{To: a.LocalAddr(), Payload: []byte("warm")}}); err != nil {
				t.Fatal(err)
			}
			rcollect(t, a, 1, 3*time.Second)
			var bad []string
			sent, got := 0, 0
			for round := range 8 {
				size := 20 + r.IntN(400)
				n := 2 + r.IntN(10)
				want := map[string]bool{}
				var msgs []transport.Message
				for i := range n {
					pl := bytes.Repeat([]byte{byte('a' + i)}, size)
					copy(pl, fmt.Sprintf("r%02di%02d", round, i))
					want[string(pl)] = true
					msgs = append(msgs, transport.Message{To: a.LocalAddr(), Payload: pl})
				}
				if err := b.Send(msgs); err != nil {
					t.Fatal(err)
				}
				sent += n
				for _, d := range rcollect(t, a, n, time.Second) {
					if !want[string(d.data)] {
						bad = append(bad, fmt.Sprintf("round %d (%d x %d B): got a %d-byte datagram that was not sent", round, n, size, len(d.data)))
						continue
					}
					delete(want, string(d.data))
					got++
				}
			}
			t.Logf("%s: %d of %d datagrams received intact; stats %+v", a.Mode(), got, sent, a.Stats())
			for _, s := range bad {
				t.Error(s)
			}
			if got != sent {
				t.Errorf("%d of %d datagrams of equal-sized trains from a kernel UDP peer arrived intact", got, sent)
			}
		})
	}
}
