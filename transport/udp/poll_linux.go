//go:build linux && !erpc_portable

package udp

import "net/netip"

// pollChecksMax bounds the receive attempts of one Poll: with each a
// system call of 1.3-1.7 us on the VM this was measured on, a poll that
// finds nothing returns to the loop (its timers, the engine's deadlines)
// within about 10 us. 32 attempts were no faster (erpc-bench latency, six
// runs side by side).
const pollChecksMax = 8

// Poll is how a busy-polling loop waits for a datagram: up to min(n,
// pollChecksMax) non-blocking receives back to back on the main socket,
// calling idle between two, the first datagram found kept for the next
// Receive. A whole idle turn of the loop (a clock read, Receive, the
// engine's bookkeeping, Send) between two receives stretched the gap
// between them, and a datagram arriving in that gap waited for the next
// receive: half the gap on average, on each side of a round trip. Polling
// made the busy loopback ping-pong 2-4 % faster on average (erpc-bench
// latency, 32 B, six runs each alternating with the loop without it).
// With several paths it returns false at once (the loop's turn reads them
// all).
func (t *Transport) Poll(n int, idle func() bool) bool {
	if t.stashed {
		return true
	}
	if len(t.paths) > 0 {
		return false
	}
	t.pollN, t.pollIdle = min(n, pollChecksMax), idle
	err := t.rc.Control(t.pollFn)
	t.pollIdle = nil
	return err != nil || t.stashed // closed: the next Receive reports it
}

// PollsBySyscall marks Poll's checks as system calls (transport.SyscallPoller).
func (t *Transport) PollsBySyscall() {}

// pollOn makes Poll's receives on fd.
func (t *Transport) pollOn(fd uintptr) {
	for i := range t.pollN {
		t.rx.reset(1)
		if n, _ := t.recvOne(fd); n == 1 {
			t.stashed = true
			return
		}
		if i+1 < t.pollN && t.pollIdle() {
			return
		}
	}
}

// takeStash passes the datagram Poll kept to fn, as Receive would have.
func (t *Transport) takeStash(fn func(netip.AddrPort, []byte)) int {
	t.stashed = false
	t.rxBatched = true // as after a lone receive that found one: a batch next
	return t.deliver(0, fn)
}
