package erpc_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// appDropper wraps a client's transport: it sends the handshake but
// drops every Application-level datagram (the connect the client holds
// until its keys are ready, and everything after), and signals the first
// one of each dial: the client has finished its handshake.
type appDropper struct {
	transport.Transport
	dropped atomic.Int64
	mu      sync.Mutex
	onApp   func()
}

func (d *appDropper) PacketSize() int { return d.Transport.(transport.PacketSizer).PacketSize() }

func (d *appDropper) Send(msgs []transport.Message) error {
	keep := msgs[:0:0]
	fire := false
	for _, m := range msgs {
		b := m.Head
		if len(b) > 1 && b[0] == 0xE9 && b[1]&3 == 2 {
			d.dropped.Add(1)
			fire = true
			continue
		}
		keep = append(keep, m)
	}
	if fire {
		d.mu.Lock()
		f := d.onApp
		d.mu.Unlock()
		if f != nil {
			f()
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return d.Transport.Send(keep)
}

// TestReviewTLSEstablishedAssocsUnbounded: a client completes TLS
// handshakes with a server (no client certificate needed) and never
// sends a connect. Each leaves the server an established association
// with no session: not counted against maxHandshakes (the cap that
// bounds "a flood ... that much state at most"), and kept until it has
// been idle twice the idle timeout (60 s). README: "A server's memory
// stays bounded under floods (unconfirmed sessions, handshakes, ... have
// caps)". After 1100 such handshakes the server must not hold more than
// 1024 associations.
func TestReviewTLSEstablishedAssocsUnbounded(t *testing.T) {
	pki := newTestPKI(t)
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	const n, par = 1100, 8
	var ms0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var wg sync.WaitGroup
	var dials atomic.Int64
	var drops atomic.Int64
	for w := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := udp.Listen("127.0.0.1:0", udp.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			d := &appDropper{Transport: u}
			cep, err := erpc.Listen("", erpc.WithTransport(d), erpc.WithTLS(pki.clientTLS()))
			if err != nil {
				t.Error(err)
				return
			}
			defer cep.Close()
			for i := w; i < n; i += par {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				d.mu.Lock()
				d.onApp = cancel // the handshake is done: give up the dial
				d.mu.Unlock()
				s, err := cep.Dial(ctx, sep.Addr().String())
				cancel()
				if err == nil {
					s.Close()
					t.Errorf("a dial whose connect was dropped succeeded")
				}
				dials.Add(1)
			}
			drops.Add(d.dropped.Load())
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	st := sep.Stats()
	assocs := erpc.TLSAssocs(sep)
	var ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	t.Logf("%d dials, %d Application datagrams dropped; server: %d handshakes completed, %d sessions, %d associations held; heap %+d KB (%.1f KB per association)",
		dials.Load(), drops.Load(), st.TLSHandshakes, st.ServerSessions, assocs,
		(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/1024, float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/1024/float64(max(assocs, 1)))
	if st.TLSHandshakes < n || drops.Load() < n {
		t.Fatalf("only %d handshakes completed, %d connects dropped: the attack did not happen", st.TLSHandshakes, drops.Load())
	}
	if assocs > 1024 {
		t.Fatalf("after %d completed handshakes that never opened a session, the server holds %d TLS associations (no cap; each kept until 60 s idle)", n, assocs)
	}
}
