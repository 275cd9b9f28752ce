package erpc

import "crypto/tls"

// ForceKeyUpdate makes ep's next flush update the sending key of every
// TLS association it has (for tests: updates are due every 2^22 packets).
func ForceKeyUpdate(ep *Endpoint) error {
	return ep.Post(func() { ep.tlsForceUpdate = true })
}

// TLSStates is the TLS state of every established association of ep.
func TLSStates(ep *Endpoint) []tls.ConnectionState {
	reply := make(chan []tls.ConnectionState, 1)
	if err := ep.Post(func() {
		var out []tls.ConnectionState
		for id := range ep.sec.byID {
			if st := ep.tlsStateOf(id); st != nil {
				out = append(out, *st)
			}
		}
		reply <- out
	}); err != nil {
		return nil
	}
	return <-reply
}

// TLSAssocs is how many TLS associations ep keeps.
func TLSAssocs(ep *Endpoint) int {
	reply := make(chan int, 1)
	if err := ep.Post(func() { reply <- len(ep.sec.byID) }); err != nil {
		return -1
	}
	return <-reply
}
