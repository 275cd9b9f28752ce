package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc"
)

// The TLS flags are named as erpc's command (cmd/erpc) and grpcurl name
// them: serve presents -cert (a PEM certificate chain) with -key (its
// private key) on both protocols; hello trusts the CA certificates in
// -cacert and checks the server's certificate for -servername, or for the
// target's host. One difference: here -insecure keeps its meaning of
// plaintext beyond loopback (erpc.Insecure), so it goes with no TLS flag.

// tlsFlags are serve's and hello's TLS flags.
type tlsFlags struct {
	cert, key  string // serve
	cacert     string // hello
	serverName string // hello
}

// serverSecurity is what serve's flags make: gRPC's transport
// credentials and erpc's options. Without -cert and -key, gRPC is
// plaintext, and so is erpc (with erpc.Insecure when plaintext is set).
func (f tlsFlags) serverSecurity(plaintext bool) (credentials.TransportCredentials, []erpc.Option, error) {
	switch {
	case f.cert == "" && f.key == "":
		if plaintext {
			return insecure.NewCredentials(), []erpc.Option{erpc.Insecure()}, nil
		}
		return insecure.NewCredentials(), nil, nil
	case f.cert == "" || f.key == "":
		return nil, nil, errors.New("-cert and -key go together: -cert FILE the server's certificate (PEM), -key FILE its private key (PEM)")
	case plaintext:
		return nil, nil, errors.New("-insecure serves plaintext, -cert and -key serve TLS: not both")
	}
	certPEM, err := readPEM("-cert", f.cert, "CERTIFICATE")
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(f.key)
	if err != nil {
		return nil, nil, fmt.Errorf("-key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("-cert %s -key %s: %w", f.cert, f.key, err)
	}
	// Two configs: gRPC adds its ALPN ("h2") to its own, erpc its own.
	grpcCfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	erpcCfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	return credentials.NewTLS(grpcCfg), []erpc.Option{erpc.WithTLS(erpcCfg)}, nil
}

// clientTLS is the TLS configuration hello's flags make, or nil when
// none is given (then hello is plaintext). With -servername unset,
// each protocol checks the certificate for the target's host.
func (f tlsFlags) clientTLS(plaintext bool) (*tls.Config, error) {
	if f.cacert == "" && f.serverName == "" {
		return nil, nil
	}
	if plaintext {
		return nil, errors.New("-insecure is plaintext, -cacert and -servername are for TLS: not both")
	}
	cfg := &tls.Config{ServerName: f.serverName, MinVersion: tls.VersionTLS13}
	if f.cacert != "" { // else the system's roots
		pemBytes, err := readPEM("-cacert", f.cacert, "CERTIFICATE")
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("-cacert %s: its CERTIFICATE blocks do not parse as X.509 certificates", f.cacert)
		}
	}
	return cfg, nil
}

// readPEM reads the file a flag names and checks it holds a PEM block of
// the type wanted, so that a key given as a certificate, or a file that
// is not PEM, is named as such.
func readPEM(flagName, file, blockType string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	var found []string
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type == blockType {
			return b, nil
		}
		found = append(found, block.Type)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s %s: no PEM data in it (want a -----BEGIN %s----- block)", flagName, file, blockType)
	}
	hint := ""
	if strings.Contains(strings.Join(found, " "), "PRIVATE KEY") {
		hint = " (a key: -cert and -cacert take certificates, -key the private key)"
	}
	return nil, fmt.Errorf("%s %s: no %s in it, only %s%s", flagName, file, blockType, strings.Join(found, ", "), hint)
}

// grpcCredentials are hello's gRPC transport credentials.
func grpcCredentials(cfg *tls.Config) credentials.TransportCredentials {
	if cfg == nil {
		return insecure.NewCredentials()
	}
	c := cfg.Clone()
	c.MinVersion = tls.VersionTLS12 // as gRPC servers accept (erpc's TLS is 1.3 only)
	return credentials.NewTLS(c)
}

// erpcOptions are hello's erpc options.
func erpcOptions(cfg *tls.Config, plaintext bool) []erpc.Option {
	switch {
	case cfg != nil:
		return []erpc.Option{erpc.WithTLS(cfg.Clone())}
	case plaintext:
		return []erpc.Option{erpc.Insecure()}
	}
	return nil
}

// adviseTLS turns the failure of a client whose TLS does not match its
// server's (a TLS client of a plaintext server, or the reverse, or a
// certificate -cacert does not verify) into what to do about it, naming
// the flags; other errors are returned as they are. withTLS says whether
// the client used TLS.
func adviseTLS(err error, target string, withTLS bool) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		msg = st.Message()
	} else if ok {
		return err // an answer from the server: TLS is not the matter
	}
	var advice string
	switch {
	case withTLS && contains(msg, "does not speak TLS", "first record does not look like a TLS handshake"):
		advice = "the server does not speak TLS (a greeter serve without -cert and -key?): " +
			"call it without -cacert and -servername if plaintext is safe there, or serve it with -cert FILE -key FILE"
	case withTLS && contains(msg, "certificate signed by unknown authority"):
		advice = "the server's certificate is not signed by a CA in -cacert FILE (without -cacert: by one of the system's roots): " +
			"give -cacert the PEM of the CA that signed it"
	case !withTLS && contains(msg, "requires TLS"):
		advice = "the server requires TLS (it was started with -cert and -key): " + cacertAdvice
	case !withTLS && contains(msg, "error reading server preface", "connection closed before server preface"):
		advice = "the server closed the connection before speaking HTTP/2: it likely requires TLS (started with -cert and -key?): " + cacertAdvice
	default:
		return err
	}
	return fmt.Errorf("%s: %s\n(%w)", target, advice, err)
}

const cacertAdvice = "give -cacert FILE, the PEM of the CA that signed its certificate " +
	"(and -servername NAME if the certificate does not name the host you call)"

// contains says whether msg contains one of signs.
func contains(msg string, signs ...string) bool {
	for _, s := range signs {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// otherCommandsFlag names the command a flag belongs to when a user gives
// it to the other one (the flag package says only "not defined").
func otherCommandsFlag(err error, cmd string) error {
	owner := map[string]string{"-cert": "serve", "-key": "serve", "-cacert": "hello", "-servername": "hello", "-timeout": "hello"}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok || owner[name] == "" || owner[name] == cmd {
		return err
	}
	return fmt.Errorf("%s is %s's flag, not %s's: serve presents -cert FILE -key FILE, hello trusts -cacert FILE", name, owner[name], cmd)
}
