//go:build linux

package tcp_test

import (
	"net"
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/tcp"
)

// TestReviewSamePortOtherHost: promise 6 in the commonest deployment,
// every node listening on the same well-known port (as erpc's own
// examples use 31850) at its own address. dialOut dials from the
// listening port only when the peer's port differs from ours
// ("c.addr.Port() != t.local.Port()"), so between two such nodes it never
// does: each knows the other by an ephemeral port, not its LocalAddr, and
// a pair that talks both ways keeps two connections. Loopback stands in
// for two hosts: 127.0.0.1:P and 127.0.0.2:P.
func TestReviewSamePortOtherHost(t *testing.T) {
	a := listen(t, "127.0.0.1:0")
	port := a.LocalAddr().Port()
	b, err := tcp.Listen(net.JoinHostPort("127.0.0.2", itoa(int(port))), tcp.Options{})
	if err != nil {
		t.Skipf("127.0.0.2:%d: %v", port, err)
	}
	defer b.Close()
	a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("ab")}})
	fromA := recvFrom(t, b)
	b.Send([]transport.Message{{To: a.LocalAddr(), Head: []byte("ba")}})
	fromB := recvFrom(t, a)
	sa, sb := a.Stats(), b.Stats()
	if fromA != a.LocalAddr() || fromB != b.LocalAddr() || sa.Conns != 1 || sb.Conns != 1 {
		t.Fatalf("b heard a (%v) from %v, a heard b (%v) from %v; connections: a %d, b %d (dialed %d+%d, ClaimFailed %d+%d)",
			a.LocalAddr(), fromA, b.LocalAddr(), fromB, sa.Conns, sb.Conns, sa.Dialed, sb.Dialed, sa.ClaimFailed, sb.ClaimFailed)
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}
