//go:build linux && !erpc_portable

package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestLoneDatagram: a lone datagram leaves through sendto, gathered from
// its head and payload, and arrives through recvfrom with its sender's
// address; one too large to gather, and a batch, take sendmmsg; an empty
// one goes too.
func TestLoneDatagram(t *testing.T) {
	a, b := listenPair(t)
	to := b.LocalAddr()
	cases := []struct {
		name       string
		msgs       []transport.Message
		wantSendto int
	}{
		{"head and payload", []transport.Message{{To: to, Head: []byte("head:"), Payload: []byte("payload")}}, 1},
		{"head only", []transport.Message{{To: to, Head: bytes.Repeat([]byte{1}, 32)}}, 1},
		{"empty", []transport.Message{{To: to}}, 1},
		{"oneMax", []transport.Message{{To: to, Head: make([]byte, 48), Payload: bytes.Repeat([]byte{2}, oneMax-48)}}, 1},
		{"over oneMax", []transport.Message{{To: to, Head: make([]byte, 48), Payload: bytes.Repeat([]byte{3}, oneMax)}}, 0},
		{"two", []transport.Message{{To: to, Head: []byte("x")}, {To: to, Head: []byte("yy")}}, 0},
	}
	for _, c := range cases {
		sent := a.tx.ones
		if err := a.Send(c.msgs); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := a.tx.ones - sent; got != c.wantSendto {
			t.Errorf("%s: %d datagrams went through sendto, want %d", c.name, got, c.wantSendto)
		}
		var got [][]byte
		var from []netip.AddrPort
		end := time.Now().Add(5 * time.Second)
		for len(got) < len(c.msgs) && time.Now().Before(end) {
			if _, err := b.Receive(func(f netip.AddrPort, d []byte) {
				got = append(got, bytes.Clone(d))
				from = append(from, f)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != len(c.msgs) {
			t.Fatalf("%s: received %d datagrams, want %d", c.name, len(got), len(c.msgs))
		}
		for i, m := range c.msgs {
			want := append(bytes.Clone(m.Head), m.Payload...)
			if !bytes.Equal(got[i], want) {
				t.Errorf("%s: datagram %d is %d bytes %q..., want %d bytes", c.name, i, len(got[i]), got[i][:min(len(got[i]), 8)], len(want))
			}
			if from[i] != a.LocalAddr() {
				t.Errorf("%s: datagram %d from %v, want %v", c.name, i, from[i], a.LocalAddr())
			}
		}
	}
	if b.rx.ones == 0 {
		t.Error("no datagram came through recvfrom")
	}
}

// TestLoneDatagramConnected: a client-only transport, whose socket is
// connected to its one peer, sends a lone datagram with sendto and no
// address.
func TestLoneDatagramConnected(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := Listen("127.0.0.1:0", Options{ClientOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := range 3 {
		if err := cli.Send([]transport.Message{{To: srv.LocalAddr(), Head: []byte{byte(i)}, Payload: []byte("call")}}); err != nil {
			t.Fatal(err)
		}
		got := receiveN(t, srv, 1)
		if len(got) != 1 || !bytes.Equal(got[0], []byte{byte(i), 'c', 'a', 'l', 'l'}) {
			t.Fatalf("send %d: received %q", i, got)
		}
	}
	if !cli.solo.connected {
		t.Fatal("the client-only socket was not connected")
	}
	if cli.tx.ones != 3 {
		t.Fatalf("%d datagrams went through sendto, want 3", cli.tx.ones)
	}
}
