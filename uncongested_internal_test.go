package erpc

import (
	"net/netip"
	"testing"

	"github.com/erpc-go/erpc/transport/udp"
)

func TestUncongestedPeers(t *testing.T) {
	tr, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	f := uncongested(tr)
	for addr, want := range map[string]bool{
		"127.0.0.1:9": true, "[::1]:9": true, "[::ffff:127.0.0.1]:9": true,
		"10.0.0.1:9": false, "192.168.1.2:9": false, "[2001:db8::1]:9": false,
	} {
		if got := f(netip.MustParseAddrPort(addr)); got != want {
			t.Errorf("over UDP, %s uncongested = %v, want %v", addr, got, want)
		}
	}
}
