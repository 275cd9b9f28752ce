// Command simecho runs erpc-go's protocol engine over the deterministic
// simulated network: a client makes echo calls of several sizes through a
// lossy, duplicating, reordering link, and the program prints what the
// protocol did to deliver every call exactly once. Time is simulated, so a
// run takes milliseconds and the same -seed always gives the same run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/simnet"
)

func main() {
	loss := flag.Float64("loss", 0.05, "probability a datagram is lost, each way")
	seed := flag.Uint64("seed", 1, "simulation seed")
	calls := flag.Int("calls", 200, "number of calls")
	flag.Parse()

	link := simnet.LinkConfig{Loss: *loss, Dup: 0.01, Reorder: 0.02, ReorderDelay: 100 * time.Microsecond,
		Delay: 10 * time.Microsecond, Jitter: 5 * time.Microsecond, Bandwidth: 1.25e9}
	net := simnet.New(*seed, link)
	srvAddr, cliAddr := netip.MustParseAddrPort("10.0.0.1:31850"), netip.MustParseAddrPort("10.0.0.2:31850")
	srv, cli := proto.New(proto.Config{}), proto.New(proto.Config{})
	engines := map[netip.AddrPort]*proto.Engine{srvAddr: srv, cliAddr: cli}

	now := proto.Time(1)
	sid := cli.Connect(now, srvAddr)
	sizes := []int{0, 32, 1024, 1500, 64 << 10, 1 << 20}
	want := map[proto.CallID][]byte{}
	for i := range *calls {
		req := bytes.Repeat([]byte{byte(i)}, sizes[i%len(sizes)])
		id, err := cli.StartCall(now, sid, 1, req, nil, proto.Never, nil)
		if err != nil {
			fail("start call: %v", err)
		}
		want[id] = req
	}
	done, failed := 0, 0
	var latest []byte
	for done < *calls {
		for _, e := range []*proto.Engine{srv, cli} {
			for ev, ok := e.NextEvent(); ok; ev, ok = e.NextEvent() {
				switch ev.Type {
				case proto.EventRequest: // the echo handler
					_ = e.Respond(now, ev.Req, 0, ev.Req.Data()) // the slot takes the request buffer over
				case proto.EventResponse:
					done++
					if ev.Err != nil || !bytes.Equal(ev.Data, want[ev.Call]) {
						failed++
					}
					latest = ev.Data
				}
			}
			from := cliAddr
			if e == srv {
				from = srvAddr
			}
			for _, p := range e.Outgoing(now) {
				net.Send(int64(now), from, p.To, p.Head(), p.Payload)
			}
		}
		next := min(proto.Time(net.Next()), srv.NextDeadline(), cli.NextDeadline())
		if next == proto.Never {
			fail("simulation stalled with %d of %d calls done", done, *calls)
		}
		now = max(now, next)
		for d, ok := net.Pop(int64(now)); ok; d, ok = net.Pop(int64(now)) {
			engines[d.To].Receive(now, d.From, d.Data)
			net.Release(d)
		}
		srv.Tick(now)
		cli.Tick(now)
	}
	_ = latest
	st, ns := cli.Stats(), net.Stats()
	fmt.Printf("%d echo calls (0 B to 1 MiB) over a simulated link: %.0f%% loss, 1%% duplication, 2%% reordering, 10 Gb/s\n", *calls, *loss*100)
	fmt.Printf("  completed correctly: %d, failed: %d, simulated time: %v\n", done-failed, failed, time.Duration(now))
	fmt.Printf("  client packets: %d sent, %d retransmitted; network: %d lost, %d duplicated, %d reordered\n",
		st.PacketsOut, st.Retransmits, ns.Lost, ns.Duplicated, ns.Reordered)
	if failed > 0 {
		os.Exit(1)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "simecho: "+format+"\n", args...)
	os.Exit(1)
}
