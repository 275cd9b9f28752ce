package erpc

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"testing"
)

// TestSPIFFEIDOfVerifiedLeafOnly: the SPIFFE ID is the one URI SAN of the
// verified chain's leaf, if it is a spiffe:// URI; a leaf that was only
// presented (not verified), one with several URIs or a URI of another
// scheme has none.
func TestSPIFFEIDOfVerifiedLeafOnly(t *testing.T) {
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	leaf := func(uris ...*url.URL) *x509.Certificate { return &x509.Certificate{URIs: uris} }
	ca := &x509.Certificate{IsCA: true}
	svid := leaf(u("spiffe://example.org/svc"))
	for _, tc := range []struct {
		name string
		st   *tls.ConnectionState
		want string
	}{
		{"no TLS", nil, ""},
		{"verified SVID", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{svid, ca}}}, "spiffe://example.org/svc"},
		{"presented, not verified", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{svid}}, ""},
		{"two URIs", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(u("spiffe://example.org/a"), u("spiffe://example.org/b")), ca}}}, ""},
		{"https URI", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(u("https://example.org/svc")), ca}}}, ""},
		{"no trust domain", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(u("spiffe:///svc")), ca}}}, ""},
		{"no URI", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(), ca}}}, ""},
	} {
		if got := spiffeID(tc.st); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
