package erpc_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// loopbackOnly wraps a UDP transport on loopback: it keeps the "udp"
// scheme (Target), delivers datagrams to loopback addresses and counts,
// without sending, every datagram addressed anywhere else, so a test can
// see what a dial would have put on the network while nothing leaves.
type loopbackOnly struct {
	transport.Transport
	mu      sync.Mutex
	offHost int
}

func (l *loopbackOnly) PacketSize() int { return l.Transport.(transport.PacketSizer).PacketSize() }
func (l *loopbackOnly) Target() string  { return l.Transport.(transport.Targeter).Target() }

func (l *loopbackOnly) Send(msgs []transport.Message) error {
	var keep []transport.Message
	l.mu.Lock()
	for _, m := range msgs {
		if m.To.Addr().Unmap().IsLoopback() {
			keep = append(keep, m)
		} else {
			l.offHost++
		}
	}
	l.mu.Unlock()
	if len(keep) == 0 {
		return nil
	}
	return l.Transport.Send(keep)
}

func (l *loopbackOnly) sentOffHost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.offHost
}

// TestReviewPolicyIPv4LinkLocalDial: a plaintext dial (neither WithTLS
// nor Insecure) to 169.254.1.2, an IPv4 link-local address (another host
// on the link: a neighbour, a cloud's metadata service), must be refused
// by the plaintext policy with InvalidArgument naming both options, and
// must send nothing. tls_policy.go exempts every link-local address as
// "refused anyway, as not supported", but only IPv6 link-local dials are
// refused (dial_each.go); an IPv4 one goes out in the clear.
func TestReviewPolicyIPv4LinkLocalDial(t *testing.T) {
	u, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &loopbackOnly{Transport: u}
	ep := listenT(t, nil, "", erpc.WithTransport(w))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, err := ep.Dial(ctx, "169.254.1.2:31850")
	if err == nil {
		s.Close()
	}
	if off := w.sentOffHost(); off != 0 || !isPolicyRefusal(err) {
		t.Fatalf("plaintext dial of IPv4 link-local 169.254.1.2: err %v; %d datagrams addressed off the host (intercepted); want the policy's InvalidArgument and nothing sent", err, off)
	}
}

// TestReviewPolicyTCPWildcard: serving plaintext on tcp://0.0.0.0 is
// serving on an address other hosts can reach (doc.go: "serving on an
// address other hosts can reach ... need WithTLS, or Insecure"); the
// policy must refuse it as it refuses udp://0.0.0.0. It is checked for
// UDP only (checkServePolicy: scheme != "udp" passes), so the listener
// opens, plaintext, on every interface. Likewise a plaintext dial of a
// tcp:// address of another interface.
func TestReviewPolicyTCPWildcard(t *testing.T) {
	var failures []string
	udpErr := func() error {
		ep, err := erpc.NewServer().Listen("udp://0.0.0.0:0")
		if err == nil {
			ep.Close()
		}
		return err
	}()
	if !isPolicyRefusal(udpErr) {
		t.Fatalf("control: udp://0.0.0.0:0 without TLS: %v, want the policy's refusal", udpErr)
	}
	srv := serverWith(t, "Echo", echoHandler)
	ep, err := srv.Listen("tcp://0.0.0.0:0")
	if err == nil {
		failures = append(failures, "Listen(tcp://0.0.0.0:0) without WithTLS or Insecure opened a plaintext listener on every interface: "+ep.Target())
		ep.Close()
	} else if !isPolicyRefusal(err) {
		failures = append(failures, "Listen(tcp://0.0.0.0:0): "+err.Error())
	}
	if ip := nonLoopbackIP(); ip.IsValid() {
		cep := listenT(t, nil, "tcp://127.0.0.1:0")
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		s, err := cep.Dial(ctx, "tcp://"+netip.AddrPortFrom(ip, 1).String())
		cancel()
		if err == nil {
			s.Close()
		}
		if !isPolicyRefusal(err) {
			failures = append(failures, "plaintext Dial(tcp://"+ip.String()+":1), not loopback: "+errString(err)+", want the policy's refusal")
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
