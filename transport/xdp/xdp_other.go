//go:build !linux

package xdp

import (
	"fmt"
	"net/netip"
	"runtime"

	"github.com/erpc-go/erpc/transport"
)

func listen(string, netip.AddrPort, Options) (transport.Transport, error) {
	return nil, fmt.Errorf("%w: AF_XDP is Linux only (this is %s)", ErrKernel, runtime.GOOS)
}
