package proto

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// tagPipe carries packets between a client and a server engine by hand,
// each under the tag the driver gives it.
type tagPipe struct {
	cli, srv         *Engine
	cliAddr, srvAddr netip.AddrPort
	now              Time
}

// deliver hands every packet e has queued to its peer under tag, and
// returns the packets' tags as the engine set them.
func (p *tagPipe) deliver(from *Engine, tag uint64) (tags []uint64) {
	to, src := p.srv, p.cliAddr
	if from == p.srv {
		to, src = p.cli, p.srvAddr
	}
	for _, pk := range from.Outgoing(p.now) {
		tags = append(tags, pk.Tag)
		to.ReceiveTagged(p.now, src, pk.AppendTo(nil), tag)
	}
	return tags
}

// TestTagBindsServerSession attacks the binding of a server session to
// the driver tag (the TLS association) of the connect that made it: a
// request naming the session, with its number and token, arriving under
// another tag (another authenticated peer who learned the token) must
// neither run nor be answered, and every packet the engine sends for a
// session carries that session's tag.
func TestTagBindsServerSession(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for iter := range 50 {
		p := &tagPipe{
			cli:     New(Config{Random: seedRandom(uint64(iter)*2 + 1)}),
			srv:     New(Config{Random: seedRandom(uint64(iter)*2 + 2)}),
			cliAddr: netip.MustParseAddrPort("10.0.0.2:1"),
			srvAddr: netip.MustParseAddrPort("10.0.0.1:1"),
		}
		good, evil := rng.Uint64()|1, rng.Uint64()|2
		if good == evil {
			evil++
		}
		sid := p.cli.ConnectTagged(p.now, p.srvAddr, good)
		for _, tg := range p.deliver(p.cli, good) { // connect
			if tg != good {
				t.Fatalf("connect went out under tag %x, want %x", tg, good)
			}
		}
		for _, tg := range p.deliver(p.srv, good) { // connect-ack
			if tg != good {
				t.Fatalf("connect-ack went out under tag %x, want %x", tg, good)
			}
		}
		drainEvents(p.cli)
		drainEvents(p.srv)
		if _, err := p.cli.StartCall(p.now, sid, 1, []byte("hi"), nil, Never, nil); err != nil {
			t.Fatal(err)
		}
		// The request reaches the server only under the wrong tag.
		p.deliver(p.cli, evil)
		_, evs := drainEvents(p.srv)
		for _, ev := range evs {
			if ev.Type == EventRequest {
				t.Fatalf("iter %d: a request under another tag ran", iter)
			}
		}
		if out := p.srv.Outgoing(p.now); len(out) != 0 {
			t.Fatalf("iter %d: the server answered a packet under another tag (%d packets)", iter, len(out))
		}
		if got := p.srv.Stats().DropWrongTag; got == 0 {
			t.Fatalf("iter %d: DropWrongTag = 0: the drop was not counted", iter)
		}
	}
}
