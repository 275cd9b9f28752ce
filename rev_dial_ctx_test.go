package erpc_test

// Adversarial test of Dial's promises about targets (review branch
// rev-dial): it fails on the code it was written against; its comment
// says which promise it holds Dial to.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// ctxResolver returns addrs, ending the dial's context as it does (a
// service-discovery resolver that answers as the caller gives up).
type ctxResolver struct {
	addrs  []netip.Addr
	cancel context.CancelFunc
}

func (r *ctxResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.cancel()
	return r.addrs, nil
}

// TestRevDialContextEndedDuringLookup: the look-up runs under the dial's
// context. When that context ends during the look-up, the dial ends there,
// saying so, and sends nothing. It goes on instead: dialEach starts the
// first attempt before it looks at the context, so a connect goes out, the
// server opens a session (which it keeps), and the error says the address
// was tried and had "no answer yet".
func TestRevDialContextEndedDuringLookup(t *testing.T) {
	checkLeaks(t)
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &ctxResolver{addrs: []netip.Addr{srv.Addr().Addr()}, cancel: cancel}
	_, err := erpc.Dial(ctx, fmt.Sprintf("late.test:%d", srv.Addr().Port()), erpc.WithResolver(r))
	time.Sleep(100 * time.Millisecond)
	if erpc.CodeOf(err) != erpc.Canceled || strings.Contains(fmt.Sprint(err), "tried") || srv.Stats().PacketsIn != 0 {
		t.Errorf("dial whose context ended during the look-up: %v; the server got %d packets and holds %d sessions; want Canceled from the look-up, nothing sent",
			err, srv.Stats().PacketsIn, srv.Stats().ServerSessions)
	}
}
