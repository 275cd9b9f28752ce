package erpc

// ForceKeyUpdate makes ep's next flush update the sending key of every
// TLS association it has (for tests: updates are due every 2^22 packets).
func ForceKeyUpdate(ep *Endpoint) error {
	return ep.Post(func() { ep.tlsForceUpdate = true })
}
