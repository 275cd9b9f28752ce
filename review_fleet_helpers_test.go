package erpc_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revServer is one replica of a review fleet: it counts handler runs,
// requests that reached it (refused ones included), streams opened, and
// session ups (connects) by its clients.
type revServer struct {
	ep       *erpc.Endpoint
	addr     string
	runs     atomic.Int64
	arrived  atomic.Int64
	streams  atomic.Int64
	ups      *atomic.Int64
	release  chan struct{}
	holding  atomic.Int64
	panicing atomic.Bool
}

// revStats counts, for a server endpoint, the requests that reach it and
// its accepted sessions; for a client endpoint, its dialed sessions.
type revStats struct {
	arrived *atomic.Int64
	ups     *atomic.Int64 // server sessions that came up
	dials   *atomic.Int64 // client sessions that came up or failed to connect
	onUp    func()
}

func (s revStats) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if info.Server && s.arrived != nil {
		s.arrived.Add(1)
	}
	return ctx
}
func (revStats) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd) {}
func (s revStats) SessionEvent(ev erpc.SessionEvent) {
	switch {
	case ev.Server && ev.Up && s.ups != nil:
		s.ups.Add(1)
		if s.onUp != nil {
			s.onUp()
		}
	case !ev.Server && (ev.Up || ev.ConnectFailed) && s.dials != nil:
		s.dials.Add(1)
	}
}

// revNewServer builds the review fleet's server: "Echo" (counts runs),
// "Hold" (blocks until release), "Boom" (panics while panicing is set),
// and "Chat", a stream echoing every message.
func revNewServer(t *testing.T) (*erpc.Server, *revServer) {
	t.Helper()
	rs := &revServer{release: make(chan struct{}), ups: new(atomic.Int64)}
	srv := erpc.NewServer()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		rs.runs.Add(1)
		return req, nil
	}, erpc.Background()))
	must(srv.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		rs.runs.Add(1)
		time.Sleep(5 * time.Millisecond)
		return req, nil
	}, erpc.Background()))
	must(srv.Handle("Hold", func(ctx context.Context, req []byte) ([]byte, error) {
		rs.holding.Add(1)
		<-rs.release
		return req, nil
	}, erpc.Background()))
	must(srv.Handle("Boom", func(ctx context.Context, req []byte) ([]byte, error) {
		rs.runs.Add(1)
		if rs.panicing.Load() {
			panic("review: failing replica")
		}
		return req, nil
	}, erpc.Background()))
	must(srv.HandleStream("Chat", func(s erpc.ServerStream) error {
		rs.streams.Add(1)
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	}))
	return srv, rs
}

// revMemFleet starts n review servers on net.
func revMemFleet(t *testing.T, net *memNet, n int) []*revServer {
	t.Helper()
	var out []*revServer
	for range n {
		srv, rs := revNewServer(t)
		rs.ep = net.Listen(t, srv, erpc.WithStatsHandler(revStats{arrived: &rs.arrived, ups: rs.ups}), erpc.WithLogger(slog.New(slog.DiscardHandler)))
		rs.addr = rs.ep.Addr().String()
		out = append(out, rs)
	}
	return out
}

func revAddrs(rs []*revServer) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.addr)
	}
	return out
}

// revWait polls cond for up to d.
func revWait(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// revCountState is how many of c's replicas are in st.
func revCountState(c *erpc.Client, st erpc.ReplicaState) int {
	n := 0
	for _, r := range c.Replicas() {
		if r.State == st {
			n++
		}
	}
	return n
}

// revFreeUDP returns a loopback UDP address free at the moment.
func revFreeUDP(t *testing.T) string {
	t.Helper()
	ep, err := erpc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ep.Addr()
	ep.Close()
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), a.Port()).String()
}

var _ = sync.Mutex{}
