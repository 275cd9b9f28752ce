package faults

import (
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

func udpListen(addr string) (transport.Transport, error) { return udp.Listen(addr, udp.Options{}) }
