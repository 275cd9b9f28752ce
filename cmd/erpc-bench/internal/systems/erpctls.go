package systems

import (
	"crypto/tls"
	"fmt"
	"slices"

	"github.com/erpc-go/erpc"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// erpc-tls: erpc over UDP with TLS 1.3 (erpc.WithTLS), the server's
// certificate self-signed ECDSA P-256 (tlscert.go), beside plaintext erpc
// over the same -transport's UDP. It runs on UDP whatever -transport
// says: TLS is what a session that leaves the host needs.

func newErpcTLSServer(cfg proc.Config) (proc.Impl, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	srv, err := BenchServer()
	if err != nil {
		return nil, err
	}
	opts := withTLS(ErpcOptions(cfg.Busy, cfg.Window), serverTLS(cert))
	ep, err := erpcListen(srv, "127.0.0.1:0", cfg.Loss, opts)
	if err != nil {
		return nil, fmt.Errorf("erpc-tls listen: %w", err)
	}
	return withCert{&erpcServer{ep: ep, at: ep.Addr().String()}, cert}, nil
}

// newErpcTLSClient is erpc-tls's client, trusting srv's certificate.
func newErpcTLSClient(srv *proc.Server, cfg Config) (*ErpcClient, error) {
	tc, err := clientTLS(srv)
	if err != nil {
		return nil, err
	}
	return newErpcClient(srv.Addr, "udp", withTLS(ErpcOptions(cfg.Busy, cfg.Window), tc), cfg.Loss, true)
}

// withTLS is opts with WithTLS(tc) last, which replaces ErpcOptions's
// Insecure.
func withTLS(opts []erpc.Option, tc *tls.Config) []erpc.Option {
	return append(slices.Clip(opts), erpc.WithTLS(tc))
}
