//go:build linux

package network

import (
	"strings"

	"github.com/erpc-go/erpc/internal/testnet"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// RunVeth runs the latency or rate grid over a veth pair between two
// network namespaces (-transport xdp): the servers in one, the clients in
// the other, erpc over AF_XDP at both ends beside erpc over UDP (erpc-udp)
// and raw-udp on the same pair. The pair goes when the run ends.
func RunVeth(b *scenario.Bench) error {
	return testbed.Run(b.Out.Ew, func(tb *testbed.TB) error {
		p := testnet.NewPair(tb)
		systems.UseVeth(&systems.Veth{
			ServerNS: p.A, ClientNS: p.B, ServerAddr: p.AddrA, ClientAddr: p.AddrB,
			// NewPair names the link "veth-<id>" in both namespaces,
			// where <id> is the namespaces' names less their last letter.
			Ifname: "veth-" + strings.TrimSuffix(p.A, "a"),
		})
		defer systems.UseVeth(nil)
		return b.RunGrid(0, nil)
	})
}
