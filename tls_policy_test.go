package erpc_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// The three ways an endpoint can be configured for the plaintext policy.
var errNoHandshake = errors.New("the policy tests make no handshake")

var policyOptions = []struct {
	name string
	opt  []erpc.Option
}{
	{"none", nil},
	{"Insecure", []erpc.Option{erpc.Insecure()}},
	// A server's config needs a certificate source (Listen refuses one
	// without); no handshake happens here, so this one is never asked.
	{"WithTLS", []erpc.Option{erpc.WithTLS(&tls.Config{MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errNoHandshake }})}},
}

// isPolicyRefusal says whether err is the plaintext policy's refusal: an
// InvalidArgument that names both ways out.
func isPolicyRefusal(err error) bool {
	var e *erpc.Error
	return errors.As(err, &e) && e.Code == erpc.InvalidArgument &&
		strings.Contains(e.Msg, "erpc.WithTLS(") && strings.Contains(e.Msg, "erpc.Insecure()")
}

// nonLoopbackIP is an address of one of this host's interfaces that is
// not loopback, or the zero Addr if it has none.
func nonLoopbackIP() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			return p.Addr()
		}
	}
	return netip.Addr{}
}

// TestServePolicyTable: Server.Listen on each address form with each
// option set. A form other hosts can reach (a wildcard, an interface's
// address, a name with such an address) is refused without WithTLS or
// Insecure, with an error naming both; loopback, "localhost", a name
// with only loopback addresses, mem:// and shm:// need nothing; a
// client-only Listen accepts no sessions, so even a wildcard needs
// nothing (its dials are checked: TestDialPolicyTable).
func TestServePolicyTable(t *testing.T) {
	names := &fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("192.0.2.7")}}
	local := &fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}}
	type form struct {
		addr     string
		resolver erpc.HostResolver
		reaches  bool // other hosts can reach it: refused without an option
		bindable bool // opening it must succeed once the policy passes
	}
	forms := []form{
		{addr: "127.0.0.1:0", bindable: true},
		{addr: "udp://127.0.0.1:0", bindable: true},
		{addr: "127.0.0.9:0", bindable: true},
		{addr: "localhost:0", bindable: true},
		{addr: "[::ffff:127.0.0.1]:0"},
		{addr: "[::1]:0"},
		{addr: "loop.example:0", resolver: local},
		{addr: "0.0.0.0:0", reaches: true, bindable: true},
		{addr: "udp://0.0.0.0:0", reaches: true, bindable: true},
		{addr: "[::]:0", reaches: true},
		{addr: ":0", reaches: true, bindable: true},
		{addr: "udp://:0", reaches: true, bindable: true},
		{addr: "db.example:0", resolver: names, reaches: true},
		{addr: fmt.Sprintf("mem://policy-%d", time.Now().UnixNano()), bindable: true},
	}
	if ip := nonLoopbackIP(); ip.IsValid() {
		forms = append(forms, form{addr: netip.AddrPortFrom(ip, 0).String(), reaches: true, bindable: true})
	}
	if runtime.GOOS == "linux" {
		forms = append(forms, form{addr: "shm://" + filepath.Join(t.TempDir(), "policy.sock"), bindable: true})
	}
	refusals := 0
	for _, f := range forms {
		for _, o := range policyOptions {
			opts := append([]erpc.Option{erpc.WithResolver(f.resolver)}, o.opt...)
			if f.resolver == nil {
				opts = o.opt
			}
			srv := serverWith(t, "Echo", echoHandler)
			ep, err := srv.Listen(f.addr, opts...)
			if ep != nil {
				ep.Close()
			}
			wantRefused := f.reaches && o.opt == nil
			switch {
			case wantRefused && !isPolicyRefusal(err):
				t.Errorf("serve on %q with %s: got %v, want the policy's refusal", f.addr, o.name, err)
			case wantRefused:
				refusals++
			case isPolicyRefusal(err):
				t.Errorf("serve on %q with %s: refused by the policy: %v", f.addr, o.name, err)
			case f.bindable && err != nil:
				t.Errorf("serve on %q with %s: %v", f.addr, o.name, err)
			}
			cep, err := erpc.Listen(f.addr, opts...)
			if isPolicyRefusal(err) || (f.bindable && err != nil && !strings.HasPrefix(f.addr, "shm")) {
				t.Errorf("client-only Listen on %q with %s: %v", f.addr, o.name, err)
			}
			if cep != nil {
				cep.Close()
			}
		}
	}
	if refusals == 0 {
		t.Fatal("no form was refused")
	}
}

// TestDialPolicyTable: a dial, from Endpoint.Dial or erpc.Dial, to
// addresses that are not all loopback is refused before anything is sent
// unless the endpoint has WithTLS or Insecure; loopback addresses (and
// the unspecified address, which means this host) need nothing. The
// context is canceled before each dial, so one the policy lets through
// ends with Canceled, nothing sent.
func TestDialPolicyTable(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	forms := []struct {
		target  string
		leaves  bool
		pkgDial bool // erpc.Dial can take it (an address, no name to look up with a canceled context)
	}{
		{target: "127.0.0.1:9", pkgDial: true},
		{target: "udp://127.0.0.1:9", pkgDial: true},
		{target: "127.5.6.7:9", pkgDial: true},
		{target: "[::1]:9", pkgDial: true},
		{target: "[::ffff:127.0.0.1]:9", pkgDial: true},
		{target: "0.0.0.0:9", pkgDial: true},
		{target: "192.0.2.1:9", leaves: true, pkgDial: true},
		{target: "udp://192.0.2.1:9", leaves: true, pkgDial: true},
		{target: "[2001:db8::1]:9", leaves: true, pkgDial: true},
		{target: "[::ffff:192.0.2.1]:9", leaves: true, pkgDial: true},
	}
	refusals := 0
	for _, f := range forms {
		for _, o := range policyOptions {
			check := func(how string, err error) {
				t.Helper()
				wantRefused := f.leaves && o.opt == nil
				switch {
				case wantRefused && !isPolicyRefusal(err):
					t.Errorf("%s %q with %s: got %v, want the policy's refusal", how, f.target, o.name, err)
				case wantRefused:
					refusals++
				case erpc.CodeOf(err) != erpc.Canceled:
					t.Errorf("%s %q with %s: got %v, want Canceled (the policy let it through)", how, f.target, o.name, err)
				}
			}
			ep, err := erpc.Listen(":0", o.opt...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ep.Dial(canceled, f.target)
			check("Endpoint.Dial", err)
			ep.Close()
			if f.pkgDial {
				_, err = erpc.Dial(canceled, f.target, o.opt...)
				check("erpc.Dial", err)
			}
		}
	}
	if refusals == 0 {
		t.Fatal("no dial was refused")
	}
}

// TestDialPolicyNames: a name is judged by all its addresses: one that
// has only loopback addresses is dialed without options; one with an
// address of another host is refused, even when a loopback one comes
// first, unless Insecure is given (then the loopback one answers first).
func TestDialPolicyNames(t *testing.T) {
	srv, err := serverWith(t, "Echo", echoHandler).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.Addr().Port()
	loop := netip.MustParseAddr("127.0.0.1")
	mixed := &fakeResolver{addrs: []netip.Addr{loop, netip.MustParseAddr("192.0.2.1")}}
	onlyLoop := &fakeResolver{addrs: []netip.Addr{loop}}
	target := fmt.Sprintf("db.example:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s, err := erpc.Dial(ctx, target, erpc.WithResolver(onlyLoop))
	if err != nil {
		t.Fatalf("a name with only loopback addresses: %v", err)
	}
	s.Close()
	_, err = erpc.Dial(ctx, target, erpc.WithResolver(mixed))
	if !isPolicyRefusal(err) || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("a name with an address of another host: got %v, want the policy's refusal naming it", err)
	}
	s, err = erpc.Dial(ctx, target, erpc.WithResolver(mixed), erpc.Insecure())
	if err != nil {
		t.Fatalf("the same name with Insecure: %v", err)
	}
	if s.Addr().Addr() != loop {
		t.Errorf("answered from %v, want the loopback address", s.Addr())
	}
	s.Close()
}

// TestPolicyErrorNamesTheFix: the refusal says what was asked and both
// ways out, for Listen and for Dial.
func TestPolicyErrorNamesTheFix(t *testing.T) {
	_, err := erpc.NewServer().Listen("0.0.0.0:0")
	for _, want := range []string{`"0.0.0.0:0"`, "erpc.WithTLS(cfg)", "erpc.Insecure()", "plaintext"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Listen: %v does not say %q", err, want)
		}
	}
	_, err = erpc.Dial(context.Background(), "192.0.2.1:31850")
	for _, want := range []string{`"192.0.2.1:31850"`, "erpc.WithTLS(cfg)", "erpc.Insecure()", "not a loopback address"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Dial: %v does not say %q", err, want)
		}
	}
}
