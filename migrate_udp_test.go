package erpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// rebindingRelay stands between a client and a server on loopback as a NAT
// that rebinds does: the client sends to the relay's front address; the
// relay forwards each datagram to the server from its current outside
// socket and the answers back to the client. Every period it moves to a
// new outside socket on the next 127.0.0.x IP and closes the old one, so
// answers on their way to the old address are lost, as behind a NAT.
type rebindingRelay struct {
	front   *net.UDPConn
	server  *net.UDPAddr
	client  atomic.Pointer[net.UDPAddr]
	outside atomic.Pointer[net.UDPConn]
	moves   atomic.Int64
	wg      sync.WaitGroup
}

func newRebindingRelay(t *testing.T, server *net.UDPAddr) *rebindingRelay {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rebindingRelay{front: front, server: server}
	if err := r.rebind(2); err != nil {
		front.Close()
		t.Skipf("cannot bind 127.0.0.2 (loopback has only 127.0.0.1 here): %v", err)
	}
	r.wg.Add(1)
	go r.forwardOut()
	return r
}

// rebind moves the relay's outside socket to 127.0.0.ip.
func (r *rebindingRelay) rebind(ip byte) error {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, ip)})
	if err != nil {
		return err
	}
	r.wg.Add(1)
	go r.forwardBack(c)
	if old := r.outside.Swap(c); old != nil {
		old.Close()
		r.moves.Add(1)
	}
	return nil
}

func (r *rebindingRelay) forwardOut() {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.client.Store(from)
		_, _ = r.outside.Load().WriteToUDP(buf[:n], r.server)
	}
}

func (r *rebindingRelay) forwardBack(c *net.UDPConn) {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, _, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if to := r.client.Load(); to != nil {
			_, _ = r.front.WriteToUDP(buf[:n], to)
		}
	}
}

func (r *rebindingRelay) close() {
	r.front.Close()
	r.outside.Load().Close()
	r.wg.Wait()
}

// TestAddressChangeUDP: the reviewer's setup through real sockets. A
// client's datagrams reach the server from a new 127.0.0.x IP every 300
// ms while eight callers call a handler that counts its executions per
// request id, a few of them slower than the rebinding period. No request
// runs twice, and since the server follows the client (migration), every
// call succeeds. The TLS variant does the same on TLS endpoints: the
// association is found by its ID, whatever the address, and the engine's
// challenge still decides when the session moves.
func TestAddressChangeUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about three seconds")
	}
	t.Run("plaintext", func(t *testing.T) { testAddressChangeUDP(t, nil, nil) })
	t.Run("tls", func(t *testing.T) {
		pki := newTestPKI(t)
		testAddressChangeUDP(t, erpc.WithTLS(pki.serverTLS()), erpc.WithTLS(pki.clientTLS()))
	})
}

func testAddressChangeUDP(t *testing.T, srvTLS, cliTLS erpc.Option) {
	checkLeaks(t)
	var mu sync.Mutex
	runs := map[uint64]int{}
	srv := erpc.NewServer()
	err := srv.Handle("Count", func(_ context.Context, req []byte) ([]byte, error) {
		id := binary.LittleEndian.Uint64(req)
		mu.Lock()
		runs[id]++
		mu.Unlock()
		if id%100 == 0 {
			time.Sleep(400 * time.Millisecond) // outlives an address change
		}
		return req, nil
	}, erpc.Background())
	if err != nil {
		t.Fatal(err)
	}
	var srvOpts, cliOpts []erpc.Option
	if srvTLS != nil {
		srvOpts, cliOpts = append(srvOpts, srvTLS), append(cliOpts, cliTLS)
	}
	sep := listenT(t, srv, "127.0.0.1:0", srvOpts...)
	relay := newRebindingRelay(t, net.UDPAddrFromAddrPort(sep.Addr()))
	defer relay.close()
	cep := listenT(t, nil, "127.0.0.1:0", cliOpts...)
	s, err := cep.Dial(context.Background(), relay.front.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	stop := make(chan struct{})
	go func() {
		for ip := byte(3); ; ip++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if err := relay.rebind(2 + ip%200); err != nil {
				t.Errorf("rebind: %v", err)
				return
			}
		}
	}()
	var next, ok, failed atomic.Uint64
	var failures sync.Map
	var wg sync.WaitGroup
	end := time.Now().Add(3 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := make([]byte, 64)
			for time.Now().Before(end) {
				id := next.Add(1)
				binary.LittleEndian.PutUint64(req, id)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.Call(ctx, "Count", req, nil)
				cancel()
				if err != nil {
					failed.Add(1)
					failures.Store(id, err)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)

	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for id, n := range runs {
		if n > 1 {
			twice++
			if twice <= 5 {
				t.Errorf("request %d ran %d times", id, n)
			}
		}
	}
	failures.Range(func(id, err any) bool {
		if errors.Is(err.(error), context.DeadlineExceeded) {
			return true
		}
		t.Errorf("call %d failed: %v", id, err)
		return true
	})
	st := sep.Stats()
	t.Logf("%d calls ok, %d failed, %d ran twice; %d address changes, %d migrations, %d challenges, %d packets dropped before validation",
		ok.Load(), failed.Load(), twice, relay.moves.Load(), st.Migrations, st.PathChallenges, st.DropUnvalidated)
	if relay.moves.Load() < 5 || st.Migrations == 0 {
		t.Fatalf("%d address changes and %d migrations: the test did not move the client", relay.moves.Load(), st.Migrations)
	}
	if srvTLS != nil && st.TLSHandshakes != 1 {
		t.Fatalf("%d TLS handshakes on the server, want 1: the session did not keep its association", st.TLSHandshakes)
	}
	if twice > 0 || failed.Load() > 0 {
		t.Fatalf("%d requests ran twice, %d calls failed", twice, failed.Load())
	}
}
