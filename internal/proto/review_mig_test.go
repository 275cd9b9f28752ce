package proto

import (
	"net/netip"
	"testing"

	"github.com/erpc-go/erpc/internal/wire"
)

// sniffServerToken returns the server session number and token that the
// client's packets carry in clear: what anyone who saw one client packet
// knows. The harness reports only sizes, so it reads them from the
// server's table, which holds exactly that.
func sniffServerToken(w *world, _ netip.AddrPort) func() (num, tok uint32, ok bool) {
	return func() (num, tok uint32, ok bool) {
		for _, h := range w.hosts {
			for _, s := range h.e.sessions {
				if s != nil && s.s != nil {
					num, tok, ok = s.num, s.token, true
				}
			}
		}
		return num, tok, ok
	}
}

// TestReviewForgedSameIPOtherPort (promise 4): a forged source on the
// client's IP but another port (a spoofer that knows the client's IP, or
// a neighbour behind the same NAT IP), with the server's token, is taken
// as the client: its disconnect ends the session, its request runs and
// is answered at its port. TestForgedSourceCannotMoveSession only forges
// other IPs.
func TestReviewForgedSameIPOtherPort(t *testing.T) {
	ts := newTServer(t, Config{Random: seedRandom(5)})
	forged := netip.AddrPortFrom(clientAddr.Addr(), clientAddr.Port()+1000)
	ts.e.Receive(ts.now, forged, pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok,
		ReqType: tReqType, MsgSize: 8, ReqNum: 1, TxSeq: 1}, make([]byte, 8)))
	names, _ := drainEvents(ts.e)
	ts.e.Outgoing(ts.now)
	ts.e.Receive(ts.now, forged, pkt(wire.Header{Type: wire.TypeDisconnect, Session: ts.num, Token: ts.tok}, nil))
	names2, _ := drainEvents(ts.e)
	if len(names) > 0 || len(names2) > 0 {
		t.Fatalf("forged packets from %v (client IP, other port): events %v after a request, %v after a disconnect",
			forged, names, names2)
	}
}
