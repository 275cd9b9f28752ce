//go:build linux

package systems

import "github.com/erpc-go/erpc/internal/testnet"

// inClientNS runs fn on a thread in the veth's client namespace, when
// the systems run over one: the sockets fn opens stay in it.
func inClientNS(fn func() error) error {
	if veth == nil {
		return fn()
	}
	return testnet.In(veth.ClientNS, fn)
}
