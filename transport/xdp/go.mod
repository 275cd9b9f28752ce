module github.com/erpc-go/erpc/transport/xdp

go 1.26.0

replace github.com/erpc-go/erpc => ../..

require (
	github.com/cilium/ebpf v0.22.0
	github.com/erpc-go/erpc v0.0.0
	golang.org/x/sys v0.49.0
)
