package erpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
)

// callPlan is what one call of the loss test expects, all drawn from the
// seed its request starts with: so the handler and the caller agree, and
// metadata that reached the wrong call could not pass for its own.
type callPlan struct {
	header, trailer erpc.Metadata
	fail            bool
	msg             []byte
}

func planOf(seed uint64) callPlan {
	rng := rand.New(rand.NewPCG(seed, 31))
	value := func(max int) string {
		b := make([]byte, rng.IntN(max))
		for i := range b {
			b[i] = byte(rng.Uint32()) // any byte, zero included
		}
		return string(b)
	}
	md := func() erpc.Metadata {
		if rng.IntN(4) == 0 {
			return nil
		}
		m := erpc.Metadata{}
		for range 1 + rng.IntN(4) { // at most 4 keys of 2 values of 900 bytes: the two blocks fit MaxMetadataSize
			k := fmt.Sprintf("k%d", rng.IntN(8))
			for range 1 + rng.IntN(2) {
				m[k] = append(m[k], value(900))
			}
		}
		return m
	}
	p := callPlan{header: md(), trailer: md(), fail: rng.IntN(3) == 0}
	p.msg = binary.LittleEndian.AppendUint64(nil, seed)
	p.msg = append(p.msg, value(4000)...)
	return p
}

// TestResponseMetadataUnderLoss: over a network that loses, duplicates
// and reorders datagrams (seeded), many concurrent calls whose answers
// carry headers and trailers of up to several packets, or none, with
// success or error answers, each get exactly their own metadata with
// their own answer. The network's faults are counted.
func TestResponseMetadataUnderLoss(t *testing.T) {
	checkLeaks(t)
	net := memnet.NewNetwork(29, memnet.LinkConfig{Loss: 0.05, Dup: 0.05, Reorder: 0.05,
		ReorderDelay: time.Millisecond, Delay: 20 * time.Microsecond})
	listen := func(srv *erpc.Server) *erpc.Endpoint {
		tr, err := net.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		return listenT(t, srv, "", erpc.WithTransport(tr))
	}
	srv := erpc.NewServer()
	srv.HandleRaw("Plan", func(q erpc.Request) {
		p := planOf(binary.LittleEndian.Uint64(q.Data()))
		if err := q.SetHeader(p.header); err != nil {
			q.RespondError(err)
			return
		}
		if err := q.SetTrailer(p.trailer); err != nil {
			q.RespondError(err)
			return
		}
		if p.fail {
			q.RespondError(erpc.Errorf(erpc.Aborted, "plan %x fails", q.Data()[:8]))
			return
		}
		q.Respond(q.Data())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := listen(nil).Dial(ctx, listen(srv).Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var calls, withMeta atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 77))
			for range 40 {
				seed := rng.Uint64()
				p := planOf(seed)
				var h, tr erpc.Metadata
				resp, err := s.Call(erpc.WithResponseMetadata(ctx, &h, &tr), "Plan", p.msg, nil)
				if p.fail {
					if erpc.CodeOf(err) != erpc.Aborted || !strings.Contains(err.Error(), fmt.Sprintf("plan %x fails", p.msg[:8])) {
						t.Errorf("seed %x: %v, want its Aborted", seed, err)
						return
					}
				} else if err != nil || string(resp) != string(p.msg) {
					t.Errorf("seed %x: %d bytes, %v", seed, len(resp), err)
					return
				}
				if !maps.EqualFunc(h, p.header, slices.Equal) || !maps.EqualFunc(tr, p.trailer, slices.Equal) {
					t.Errorf("seed %x: metadata differs: %d/%d header keys, %d/%d trailer keys",
						seed, len(h), len(p.header), len(tr), len(p.trailer))
					return
				}
				calls.Add(1)
				if h != nil || tr != nil {
					withMeta.Add(1)
				}
			}
		})
	}
	wg.Wait()
	st := net.Stats()
	if st.Lost == 0 || st.Duplicated == 0 {
		t.Fatalf("the network injected no faults: %+v", st)
	}
	if t.Failed() {
		return
	}
	if withMeta.Load() == 0 || withMeta.Load() == calls.Load() {
		t.Fatalf("%d of %d calls with metadata: want some of each", withMeta.Load(), calls.Load())
	}
	t.Logf("%d calls, %d with metadata; network %+v", calls.Load(), withMeta.Load(), st)
}

// corrupting wraps a transport: it rewrites the first packet of every
// message of type typ (responses, or requests) that carries FlagMetadata,
// so that its metadata no longer parses (a broken or hostile peer), one
// way per message.
type corrupting struct {
	*memnet.Transport
	typ  wire.Type
	mu   sync.Mutex
	rng  *rand.Rand
	done atomic.Int64
}

func (c *corrupting) Send(msgs []transport.Message) error {
	for i := range msgs {
		var h wire.Header
		if _, err := h.Parse(msgs[i].Head); err != nil || h.Type != c.typ || h.Flags&wire.FlagMetadata == 0 || h.PktIndex != 0 {
			continue
		}
		p := append([]byte(nil), msgs[i].Payload...) // the engine keeps its copy for resends
		c.mu.Lock()
		switch c.rng.IntN(4) {
		case 0: // the header block claims more than the message has
			p[0], p[1], p[2] = 0xff, 0xff, 0x03
		case 1: // the header block claims more keys than its bytes could hold
			p[1] = 0x7f
		case 2: // an unterminated length
			for j := range min(len(p), 12) {
				p[j] = 0x80
			}
		default: // the header block ends early: its bytes spill into the trailers
			p[0]--
		}
		c.mu.Unlock()
		msgs[i].Payload = p
		c.done.Add(1)
	}
	return c.Transport.Send(msgs)
}

// TestMalformedResponseMetadata: answers whose metadata does not parse
// fail their calls with DataLoss, saying so, each counted in the client's
// MalformedMetadata, never a panic; the session goes on serving.
func TestMalformedResponseMetadata(t *testing.T) {
	checkLeaks(t)
	net := memnet.NewNetwork(3, memnet.LinkConfig{})
	tr, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	bad := &corrupting{Transport: tr, typ: wire.TypeResp, rng: rand.New(rand.NewPCG(3, 3))}
	srv := erpc.NewServer()
	srv.HandleRaw("Meta", func(q erpc.Request) {
		q.SetHeader(erpc.Pairs("k", "v", "k2", strings.Repeat("x", 40)))
		q.SetTrailer(erpc.Pairs("t", "v"))
		q.Respond(q.Data())
	})
	srv.HandleRaw("Plain", func(q erpc.Request) { q.Respond(q.Data()) })
	srvEP := listenT(t, srv, "", erpc.WithTransport(bad))
	ctr, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	cliEP := listenT(t, nil, "", erpc.WithTransport(ctr))
	s, err := cliEP.Dial(context.Background(), srvEP.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const calls = 40
	for i := range calls {
		var h erpc.Metadata
		_, err := s.Call(erpc.WithResponseMetadata(ctx, &h, nil), "Meta", []byte("req"), nil)
		if erpc.CodeOf(err) != erpc.DataLoss || !strings.Contains(err.Error(), "malformed metadata") || h != nil {
			t.Fatalf("call %d: %v (header %q), want DataLoss", i, err, h)
		}
		if resp, err := s.Call(ctx, "Plain", []byte("still"), nil); err != nil || string(resp) != "still" {
			t.Fatalf("after call %d: %q %v", i, resp, err)
		}
	}
	if got := cliEP.Stats().MalformedMetadata; got != calls || bad.done.Load() < calls {
		t.Fatalf("MalformedMetadata %d, %d answers corrupted; want %d", got, bad.done.Load(), calls)
	}
}

// TestMalformedRequestMetadata: requests whose metadata does not parse
// are refused unrun with InvalidArgument, each counted in the server's
// MalformedMetadata; the session goes on serving.
func TestMalformedRequestMetadata(t *testing.T) {
	checkLeaks(t)
	net := memnet.NewNetwork(5, memnet.LinkConfig{})
	str, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	srv := erpc.NewServer()
	srv.HandleRaw("Echo", func(q erpc.Request) { ran.Add(1); q.Respond(q.Data()) })
	srvEP := listenT(t, srv, "", erpc.WithTransport(str))
	ctr, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	bad := &corrupting{Transport: ctr, typ: wire.TypeReq, rng: rand.New(rand.NewPCG(5, 5))}
	s, err := listenT(t, nil, "", erpc.WithTransport(bad)).Dial(context.Background(), srvEP.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	withMD := erpc.AppendToOutgoingContext(ctx, "k", strings.Repeat("v", 40), "k2", "w")
	const calls = 40
	for i := range calls {
		_, err := s.Call(withMD, "Echo", []byte("req"), nil)
		if erpc.CodeOf(err) != erpc.InvalidArgument || !erpc.NotExecuted(err) {
			t.Fatalf("call %d: %v, want InvalidArgument, not executed", i, err)
		}
		if resp, err := s.Call(ctx, "Echo", []byte("still"), nil); err != nil || string(resp) != "still" {
			t.Fatalf("after call %d: %q %v", i, resp, err)
		}
	}
	if got := srvEP.Stats().MalformedMetadata; got != calls || bad.done.Load() < calls || ran.Load() != calls {
		t.Fatalf("MalformedMetadata %d, %d requests corrupted, %d ran; want %d, %d, %d", got, bad.done.Load(), ran.Load(), calls, calls, calls)
	}
}
