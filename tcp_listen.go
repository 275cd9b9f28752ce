package erpc

import (
	"fmt"
	"net"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/tcp"
)

// openTCP opens the TCP transport of "tcp://host:port" (rest is after the
// scheme); "tcp://" is a client-only one, which a server cannot use.
func openTCP(addr, rest string, clientOnly bool) (transport.Transport, error) {
	if rest == "" && !clientOnly {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf(`serve on %q: with no address a tcp endpoint is client-only, `+
			`and no client could reach it: give one, as in "tcp://0.0.0.0:31850"`, addr)}
	}
	if rest != "" {
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("listen on %q: want host:port (port 0 picks one)", addr), Cause: err}
		}
	}
	t, err := tcp.Listen(rest, tcp.Options{})
	if err != nil {
		return nil, openError(addr, err)
	}
	return t, nil
}
