package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/tcp"
)

var goodPreface = []byte("eRPC/tcp\x01\n")

// until polls cond for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// rawPeer connects to tr, writes b, and returns what tr sends back until
// it closes the connection, running tr's loop (Receive, into got) meanwhile.
func rawPeer(t *testing.T, tr *tcp.Transport, b []byte, got *[]string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", tr.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(c)
		done <- result{b, err}
	}()
	for {
		select {
		case r := <-done:
			if r.err != nil && !errors.Is(r.err, net.ErrClosed) && !isReset(r.err) {
				t.Fatalf("reading what the transport sent: %v", r.err)
			}
			return r.b
		default:
		}
		tr.Receive(func(_ netip.AddrPort, d []byte) {
			if got != nil {
				*got = append(*got, string(d))
			}
		})
		tr.Wait(time.Now().Add(time.Millisecond))
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestWrongPreface: a peer that speaks something else (HTTP, TLS's first
// byte, another framing version) is cut off on its first bytes, counted,
// and is never the peer of a datagram; a well-behaved peer is served
// meanwhile.
func TestWrongPreface(t *testing.T) {
	tr := listen(t, "127.0.0.1:0")
	for i, b := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
		{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc},
		append([]byte("eRPC/tcp\x02\n"), 0, 0, 0, 1, 'x'),
	} {
		got := rawPeer(t, tr, b, nil)
		if !bytes.HasPrefix(goodPreface, got) { // the close may overtake the preface
			t.Errorf("peer %d was sent %q before the close, want (part of) the preface alone", i, got)
		}
		if n := tr.Stats().BadPreface; n != uint64(i+1) {
			t.Fatalf("after %d wrong prefaces, BadPreface = %d", i+1, n)
		}
	}
	good := listen(t, "127.0.0.1:0")
	if err := good.Send([]transport.Message{{To: tr.LocalAddr(), Head: []byte("fine")}}); err != nil {
		t.Fatal(err)
	}
	var from []netip.AddrPort
	until(t, "the good peer's datagram", func() bool {
		tr.Receive(func(f netip.AddrPort, d []byte) { from = append(from, f) })
		return len(from) > 0
	})
	if len(from) != 1 || from[0] != good.LocalAddr() {
		t.Fatalf("datagrams from %v, want one from %v", from, good.LocalAddr())
	}
}

// TestMalformedFrame: a length over MaxDatagram closes that connection,
// counted; the frames before it are delivered; nothing panics.
func TestMalformedFrame(t *testing.T) {
	tr := listen(t, "127.0.0.1:0")
	var b []byte
	b = append(b, goodPreface...)
	b = binary.BigEndian.AppendUint32(b, 3)
	b = append(b, "abc"...)
	b = binary.BigEndian.AppendUint32(b, tcp.MaxDatagram+1)
	b = append(b, "rest"...)
	var got []string
	rawPeer(t, tr, b, &got)
	if n := tr.Stats().Malformed; n != 1 {
		t.Fatalf("Malformed = %d, want 1", n)
	}
	if len(got) != 1 || got[0] != "abc" {
		t.Fatalf("delivered %q, want the one frame before the bad length", got)
	}
	var gone []netip.AddrPort
	until(t, "the cut-off peer reported gone", func() bool { gone = tr.GonePeers(gone); return len(gone) == 1 })
}

// TestDialNotErpc: dialing a port where something else listens (an HTTP
// server; a server that accepts and says nothing) reports the peer gone
// at once (the first) or after DialTimeout (the second), counted; through
// erpc.Dial, the dial fails with Unavailable long before its deadline.
func TestDialNotErpc(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer hs.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr, err := tcp.Listen("127.0.0.1:0", tcp.Options{DialTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	httpAddr := netip.MustParseAddrPort(hs.Listener.Addr().String())
	silentAddr := netip.MustParseAddrPort(silent.Addr().String())
	tr.Send([]transport.Message{{To: httpAddr, Head: []byte("x")}, {To: silentAddr, Head: []byte("y")}})
	var gone []netip.AddrPort
	until(t, "both peers reported gone", func() bool { gone = tr.GonePeers(gone); return len(gone) == 2 })
	if st := tr.Stats(); st.BadPreface != 1 {
		t.Fatalf("BadPreface = %d after an HTTP server's answer, want 1 (stats %+v)", st.BadPreface, st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err = erpc.Dial(ctx, "tcp://"+httpAddr.String())
	if !errors.Is(err, erpc.ErrUnavailable) || time.Since(start) > 10*time.Second {
		t.Fatalf("dial of an HTTP server: %v after %v, want Unavailable at once", err, time.Since(start))
	}
	t.Logf("dial of an HTTP server: %v", err)
}

// TestListenPortTaken: a transport that has dialed a peer (a connection
// open) still holds its listening port alone: a second transport cannot
// listen on it.
func TestListenPortTaken(t *testing.T) {
	tr := listen(t, "127.0.0.1:0")
	peer := listen(t, "127.0.0.1:0")
	tr.Send([]transport.Message{{To: peer.LocalAddr(), Head: []byte("x")}}) // a dialed connection
	until(t, "the datagram", func() bool { n, _ := peer.Receive(func(netip.AddrPort, []byte) {}); return n == 1 })
	if second, err := tcp.Listen(tr.LocalAddr().String(), tcp.Options{}); err == nil {
		second.Close()
		t.Fatal("a second transport listened on a port in use")
	}
}

// TestMaxConns: connections beyond MaxConns are closed at once, counted.
func TestMaxConns(t *testing.T) {
	tr, err := tcp.Listen("127.0.0.1:0", tcp.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for range 4 {
		c, err := net.Dial("tcp", tr.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	until(t, "two refusals", func() bool { return tr.Stats().Refused == 2 })
	if n := tr.Stats().Conns; n != 2 {
		t.Fatalf("%d connections held, MaxConns 2", n)
	}
}
