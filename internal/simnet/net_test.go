package simnet

import (
	"math"
	"net/netip"
	"testing"
	"time"
)

var (
	a = netip.MustParseAddrPort("10.0.0.1:1")
	b = netip.MustParseAddrPort("10.0.0.2:1")
)

func drain(n *Net, now int64) (got []Datagram) {
	for {
		d, ok := n.Pop(now)
		if !ok {
			return got
		}
		got = append(got, d)
	}
}

func TestPerfectLinkDeliversInOrderAfterDelay(t *testing.T) {
	n := New(1, LinkConfig{Delay: time.Millisecond})
	for i := range 5 {
		n.Send(0, a, b, []byte{byte(i)}, []byte("x"))
	}
	if got := drain(n, int64(time.Millisecond)-1); len(got) != 0 {
		t.Fatalf("delivered %d datagrams before the delay", len(got))
	}
	got := drain(n, int64(time.Millisecond))
	if len(got) != 5 {
		t.Fatalf("delivered %d, want 5", len(got))
	}
	for i, d := range got {
		if d.Data[0] != byte(i) || string(d.Data[1:]) != "x" || d.From != a || d.To != b {
			t.Fatalf("datagram %d: %+v", i, d)
		}
	}
	if n.Next() != Never {
		t.Fatalf("Next = %d with nothing in flight", n.Next())
	}
}

func TestLossAndDupRatesFollowConfig(t *testing.T) {
	const sent = 20000
	n := New(7, LinkConfig{Loss: 0.3, Dup: 0.05})
	for range sent {
		n.Send(0, a, b, []byte("p"))
	}
	got := len(drain(n, 0))
	st := n.Stats()
	lossRate := float64(st.Lost) / sent
	dupRate := float64(st.Duplicated) / float64(sent-st.Lost)
	if math.Abs(lossRate-0.3) > 0.02 || math.Abs(dupRate-0.05) > 0.01 {
		t.Fatalf("loss %.3f dup %.3f", lossRate, dupRate)
	}
	if uint64(got) != sent-st.Lost+st.Duplicated {
		t.Fatalf("delivered %d, accounting says %d", got, sent-st.Lost+st.Duplicated)
	}
}

func TestReorderingHoldsSomeBack(t *testing.T) {
	n := New(3, LinkConfig{Reorder: 0.5, ReorderDelay: time.Millisecond})
	for i := range 100 {
		n.Send(int64(i), a, b, []byte{byte(i)})
	}
	got := drain(n, int64(time.Second))
	inversions := 0
	for i := 1; i < len(got); i++ {
		if got[i].Data[0] < got[i-1].Data[0] {
			inversions++
		}
	}
	if len(got) != 100 || inversions == 0 {
		t.Fatalf("got %d datagrams, %d inversions", len(got), inversions)
	}
}

func TestBandwidthSerializesAndQueueDrops(t *testing.T) {
	// 1000 bytes/s: a 100-byte datagram takes 100 ms on the wire.
	n := New(1, LinkConfig{Bandwidth: 1000, QueueBytes: 250})
	for range 5 {
		n.Send(0, a, b, make([]byte, 100))
	}
	if st := n.Stats(); st.QueueDrops != 2 {
		t.Fatalf("queue drops %d, want 2 (250 queued bytes hold two 100-byte datagrams behind the one on the wire)", st.QueueDrops)
	}
	got := drain(n, int64(time.Second))
	for i, d := range got {
		if want := int64(i+1) * int64(100*time.Millisecond); d.At != want {
			t.Fatalf("datagram %d arrives at %v, want %v", i, time.Duration(d.At), time.Duration(want))
		}
	}
}

func TestJitterKeepsOrder(t *testing.T) {
	n := New(5, LinkConfig{Jitter: time.Millisecond})
	for i := range 100 {
		n.Send(int64(i), a, b, []byte{byte(i)})
	}
	got := drain(n, int64(time.Second))
	for i, d := range got {
		if d.Data[0] != byte(i) {
			t.Fatalf("datagram %d arrived in position %d", d.Data[0], i)
		}
	}
}

func TestSameSeedSameRun(t *testing.T) {
	run := func() []int64 {
		n := New(42, LinkConfig{Loss: 0.2, Dup: 0.1, Reorder: 0.2, Jitter: time.Millisecond, ReorderDelay: time.Millisecond})
		for i := range 200 {
			n.Send(int64(i), a, b, []byte{byte(i)})
		}
		var at []int64
		for _, d := range drain(n, int64(time.Second)) {
			at = append(at, d.At, int64(d.Data[0]))
		}
		return at
	}
	x, y := run(), run()
	if len(x) != len(y) {
		t.Fatal("different lengths")
	}
	for i := range x {
		if x[i] != y[i] {
			t.Fatal("same seed gave a different run")
		}
	}
}

func TestPartition(t *testing.T) {
	n := New(1, LinkConfig{})
	n.SetLink(a, b, LinkConfig{Down: true})
	n.Send(0, a, b, []byte("x"))
	n.Send(0, b, a, []byte("y"))
	got := drain(n, 0)
	if len(got) != 1 || got[0].To != a {
		t.Fatalf("got %+v", got)
	}
}

// TestIngressBottleneck: two senders, each offering the bottleneck's whole
// rate, share it: together they get its rate, the excess is dropped at the
// full queue, and the queue never holds more than its limit.
func TestIngressBottleneck(t *testing.T) {
	c := netip.MustParseAddrPort("10.0.0.3:1")
	n := New(1, LinkConfig{Delay: time.Microsecond})
	const bw, limit, size = 1e6, 10_000, 1000 // 1 MB/s: 1 ms per datagram
	n.SetIngress(b.Addr(), bw, limit)
	var last int64
	for i := range 1000 { // each sender: one datagram per ms, for a second
		now := int64(i) * int64(time.Millisecond)
		for _, from := range []netip.AddrPort{a, c} {
			at, copies := n.Schedule(now, from, b, size)
			if copies == 1 {
				last = max(last, at[0])
			}
		}
	}
	st := n.Ingress(b.Addr())
	rate := float64(st.Bytes) / (float64(last) / 1e9)
	if rate < 0.99*bw || rate > 1.01*bw {
		t.Errorf("delivered %.0f B/s through a %.0f B/s bottleneck", rate, bw)
	}
	if st.Drops < 900 || st.Drops > 1000 || n.Stats().QueueDrops != st.Drops {
		t.Errorf("%d drops (net: %d), want about half of the 2000 offered", st.Drops, n.Stats().QueueDrops)
	}
	if st.MaxQueue > limit || st.MaxQueue < limit-2*size {
		t.Errorf("max queue %.0f B, limit %d", st.MaxQueue, limit)
	}
	if got := n.Ingress(a.Addr()); got != (IngressStats{}) {
		t.Errorf("a host without a bottleneck has counters %+v", got)
	}
}
