package erpc_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTLSVerifyCallbackPanicKillsProcess: a server's
// VerifyPeerCertificate with an everyday bug (it assumes the client sends
// an intermediate, raw[1]) panics when a client presents a lone leaf.
// Handler panics are recovered by erpc (an Internal error); a TLS
// callback's panic happens on crypto/tls's handshake goroutine, which
// erpc starts (tls.QUICServer) and nothing recovers, so any remote client
// that reaches the callback kills the whole server process, every
// session of every endpoint in it. The test runs the server and a client
// in a child process and checks the child is still alive after the dial.
func TestReviewTLSVerifyCallbackPanicKillsProcess(t *testing.T) {
	if os.Getenv("ERPC_REVIEW_PANIC_CHILD") == "1" {
		reviewPanicChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReviewTLSVerifyCallbackPanicKillsProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ERPC_REVIEW_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "SURVIVED") {
		head := string(out)
		if i := strings.Index(head, "goroutine "); i > 0 && len(head) > i+600 {
			head = head[:i+600] + "..."
		}
		t.Fatalf("the server process died when a client reached its panicking VerifyPeerCertificate (exit: %v):\n%s", err, head)
	}
}

func reviewPanicChild(t *testing.T) {
	pki := newTestPKI(t)
	scfg := pki.serverTLS()
	scfg.ClientAuth = tls.RequireAnyClientCert
	scfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		inter, err := x509.ParseCertificate(raw[1]) // the bug: a lone leaf has no raw[1]
		if err != nil {
			return err
		}
		_ = inter
		return nil
	}
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(scfg))
	ccfg := pki.clientTLS()
	ccfg.Certificates = []tls.Certificate{pki.client}
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(ccfg))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := cep.Dial(ctx, sep.Addr().String())
	time.Sleep(200 * time.Millisecond)
	fmt.Printf("SURVIVED: the dial ended with %v\n", err)
}
