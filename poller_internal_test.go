package erpc

import (
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
)

// memPoller is a transport with a Poller of loads (as shm's).
type memPoller struct{ transport.Transport }

func (memPoller) Poll(int, func() bool) bool { return false }

// sysPoller is a transport whose Poller makes system calls (as udp's).
type sysPoller struct{ memPoller }

func (sysPoller) PollsBySyscall() {}

// TestPollerOf: the loop polls a transport of cheap checks in both modes
// and keeps its clock after a poll; one of system calls only when busy
// polling, reading the clock after a poll; and none without a Poller.
func TestPollerOf(t *testing.T) {
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	tr, err := net.Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cases := []struct {
		name       string
		tr         transport.Transport
		busy       bool
		polls      bool
		readsClock bool
	}{
		{"no poller", tr, true, false, false},
		{"loads, default", memPoller{tr}, false, true, false},
		{"loads, busy", memPoller{tr}, true, true, false},
		{"syscalls, default", sysPoller{memPoller{tr}}, false, false, false},
		{"syscalls, busy", sysPoller{memPoller{tr}}, true, true, true},
	}
	for _, c := range cases {
		p, clock := pollerOf(c.tr, c.busy)
		if (p != nil) != c.polls || clock != c.readsClock {
			t.Errorf("%s: polls %v, reads the clock %v; want %v, %v", c.name, p != nil, clock, c.polls, c.readsClock)
		}
	}
}
