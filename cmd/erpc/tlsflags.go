package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/erpc-go/erpc"
)

// The security flags are grpcurl's, with grpcurl's meanings: -plaintext
// is no TLS at all; -insecure is TLS that skips verifying the server's
// certificate and name (encrypted, but not authenticated); -cacert, -cert
// and -key give the roots and the client's certificate; -servername the
// name to verify. One difference, erpc's plaintext policy: with none of
// them, a loopback or shm:// target is dialed in plaintext (it never
// leaves the host), and any other target is refused, naming the flags,
// where grpcurl would try TLS with the system's roots. Any TLS flag makes
// the session TLS 1.3 (erpc.WithTLS), with the system's roots unless
// -cacert gives others.

// tlsFlags are the command line's security flags.
type tlsFlags struct {
	plaintext  bool
	insecure   bool
	cacert     string
	cert, key  string
	serverName string
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.plaintext, "plaintext", false, "no TLS: the session is plaintext (needed for a target other than loopback or shm:// without TLS)")
	fs.BoolVar(&f.insecure, "insecure", false, "TLS without verifying the server's certificate or name: encrypted, NOT authenticated")
	fs.StringVar(&f.cacert, "cacert", "", "TLS: a PEM `file` of the root certificates that verify the server (default: the system's)")
	fs.StringVar(&f.cert, "cert", "", "TLS: a PEM `file` of the client's certificate chain, to present to the server (with -key)")
	fs.StringVar(&f.key, "key", "", "TLS: a PEM `file` of the client's private key (with -cert)")
	fs.StringVar(&f.serverName, "servername", "", "TLS: the `name` the server's certificate must have (default: the target's host)")
}

// wantsTLS says whether a TLS flag was given.
func (f *tlsFlags) wantsTLS() bool {
	return f.insecure || f.cacert != "" || f.cert != "" || f.key != "" || f.serverName != ""
}

// dialOptions are the options the flags make for a session to target:
// WithTLS, Insecure, or none (the plaintext policy decides).
func (f *tlsFlags) dialOptions(target string) ([]erpc.Option, error) {
	switch {
	case f.plaintext && f.wantsTLS():
		return nil, usageError("-plaintext is a session without TLS; -insecure, -cacert, -cert, -key and -servername are for TLS: not both")
	case f.plaintext:
		return []erpc.Option{erpc.Insecure()}, nil
	case !f.wantsTLS():
		return nil, nil
	}
	cfg, err := f.tlsConfig(target)
	if err != nil {
		return nil, err
	}
	return []erpc.Option{erpc.WithTLS(cfg)}, nil
}

// tlsConfig builds the client's TLS configuration from the flags.
func (f *tlsFlags) tlsConfig(target string) (*tls.Config, error) {
	if (f.cert == "") != (f.key == "") {
		return nil, usageError("-cert and -key go together: the client's certificate and its private key")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: f.insecure, ServerName: f.serverName}
	if cfg.ServerName == "" {
		cfg.ServerName = targetHost(target)
	}
	if f.cacert != "" {
		pem, err := os.ReadFile(f.cacert)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-cacert %s: no PEM certificate in it", f.cacert)
		}
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("-cert %s -key %s: %w", f.cert, f.key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// targetHost is the host of a UDP or TCP target, as a certificate names it: a
// name, or an IP address without brackets; "" for shm:// targets.
func targetHost(target string) string {
	rest, ok := strings.CutPrefix(target, "udp://")
	if !ok {
		rest, ok = strings.CutPrefix(target, "tcp://")
	}
	if !ok && strings.Contains(target, "://") {
		return ""
	}
	host, _, err := net.SplitHostPort(rest)
	if err != nil {
		return ""
	}
	return host
}

// tlsRequired turns a TLS server's refusal of a plaintext session into
// the command's advice, which names the flags rather than the Go option
// (erpc.WithTLS); other errors are returned as they are.
func tlsRequired(err error, target string) error {
	var e *erpc.Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "requires TLS") {
		return err
	}
	return fmt.Errorf("connect to %s: the server requires TLS: use -cacert FILE (the PEM of the CA that signed its certificate), "+
		"or -insecure to skip verifying it (and -cert FILE -key FILE if it asks for a client certificate)", target)
}

// policyRefusal turns the plaintext policy's refusal of a dial into the
// command's usage error, which names the flags rather than the options;
// other errors are returned as they are.
func policyRefusal(err error, target string) error {
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.InvalidArgument || !strings.Contains(e.Msg, "erpc.Insecure()") {
		return err
	}
	why, _, _ := strings.Cut(e.Msg, ", and sessions there would be plaintext")
	return usageError("%s: %s, and a session there would be plaintext: give -plaintext to run it plaintext on purpose, "+
		"or TLS flags (-cacert FILE, -cert FILE -key FILE, -insecure, -servername NAME)", target, strings.TrimPrefix(why, fmt.Sprintf("dial %q: ", target)))
}
