package erpc

// Handoffs is how many times ep's loop was handed off (for tests).
func Handoffs(ep *Endpoint) int64 { return ep.watch.handoffs.Load() }
