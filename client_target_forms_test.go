package erpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestClientPortFormsAgreeWithDial: an entry whose port erpc.Dial refuses
// as malformed (a hex port, a service name the system does not know for
// UDP) is refused by NewClient too, plain or in a static list, rather
// than taken and then failing every call.
func TestClientPortFormsAgreeWithDial(t *testing.T) {
	checkLeaks(t)
	refused := 0
	for target, entry := range map[string]string{"127.0.0.1:http": "", "127.0.0.1:0x50": "", "udp://127.0.0.1:0x50": "",
		"static:///127.0.0.1:0x50,127.0.0.1:http": "127.0.0.1:0x50", "static:///127.0.0.1:5000,127.0.0.1:http": "127.0.0.1:http"} {
		if entry == "" {
			entry = target
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, derr := erpc.Dial(ctx, entry)
		cancel()
		if s != nil {
			s.Close()
		}
		if erpc.CodeOf(derr) != erpc.InvalidArgument {
			t.Logf("%q: Dial says %v: not a form Dial refuses here", target, derr)
			continue
		}
		refused++
		c, err := erpc.NewClient(target)
		if err == nil {
			took, cerr := callClient(c)
			c.Close()
			t.Errorf("%q: Dial refuses it (%v), NewClient took it; a call then: %v after %v", target, derr, cerr, took.Round(time.Millisecond))
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), target) {
			t.Errorf("NewClient(%q): %v, want InvalidArgument naming the target", target, err)
		}
	}
	if refused == 0 {
		t.Fatal("Dial refused none of the forms: the test checked nothing")
	}
}

// TestClientPlaintextPolicyLiteralForms: a literal address of another
// host, without WithTLS or Insecure, is refused by NewClient in every form
// a target can carry it: plain, udp://, static:///, and dns:/// (whose
// resolver gives the IP as it is).

func TestClientPlaintextPolicyLiteralForms(t *testing.T) {
	checkLeaks(t)
	for _, target := range []string{"10.1.2.3:5000", "udp://10.1.2.3:5000", "static:///10.1.2.3:5000",
		"dns:///10.1.2.3:5000", "dns:///[2001:db8::1]:5000", "static:///127.0.0.1:5000,10.1.2.3:5000"} {
		c, err := erpc.NewClient(target)
		if err == nil {
			took, cerr := callClient(c)
			c.Close()
			t.Errorf("NewClient(%q) took it; a call then: %v after %v", target, cerr, took.Round(time.Millisecond))
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "erpc.Insecure()") {
			t.Errorf("NewClient(%q): %v, want the plaintext policy's InvalidArgument", target, err)
		}
	}
	// A name is left to the dials (it may resolve to this host).
	c, err := erpc.NewClient("dns:///localhost:5000")
	if err != nil {
		t.Fatalf("NewClient(dns:///localhost:5000): %v", err)
	}
	c.Close()
}
