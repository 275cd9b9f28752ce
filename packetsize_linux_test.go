//go:build linux

package erpc_test

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport/shm"
)

// TestLargePacketsCarryWholeLines: over shm (which asks for the largest
// packets, PacketSize) a large request goes in packets of 65,472 bytes of
// data, a multiple of 64, so that each packet's data starts on a cache
// line of the message buffers at both ends; the call's bytes arrive
// intact. With the wire's limit of 65,535 bytes, packet i started i bytes
// into a line (odd i: not even 16-byte aligned), which took the receiver
// off memmove's fastest path.
func TestLargePacketsCarryWholeLines(t *testing.T) {
	dir := t.TempDir()
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "shm://"+filepath.Join(dir, "s.sock"))
	tr, err := shm.Listen("", shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &shmRecorder{recorder{Transport: tr}, tr}
	cli := listenT(t, nil, "", erpc.WithTransport(rec))
	s := dialT(t, shmTarget{}, cli, srv)
	req := make([]byte, 1<<20+12345)
	for i := range req {
		req[i] = byte(i * 7)
	}
	rec.mu.Lock()
	rec.on = true
	rec.mu.Unlock()
	resp, err := call(t, s, "Echo", req)
	if err != nil || !bytes.Equal(resp, req) {
		t.Fatalf("echo of %d bytes: %d bytes back, %v", len(req), len(resp), err)
	}
	sent, _ := rec.take()
	// Each request packet by index (the wrapped transport is not
	// Reliable to the engine, which may send one twice).
	data := map[uint32]int{}
	var h wire.Header
	for _, d := range sent {
		if payload, err := h.Parse(d); err == nil && h.Type == wire.TypeReq {
			data[h.PktIndex] = len(payload)
		}
	}
	pkts := wire.NumPackets(len(req), maxPacketData)
	total := 0
	for i := range pkts {
		n, ok := data[uint32(i)]
		if !ok || (i < pkts-1 && n != maxPacketData) {
			t.Fatalf("request packet %d of %d carries %d bytes of data (sent: %v), want %d (a whole number of lines)", i, pkts, n, ok, maxPacketData)
		}
		total += n
	}
	if len(data) != pkts || total != len(req) {
		t.Fatalf("%d request packets carrying %d bytes, want %d carrying %d", len(data), total, pkts, len(req))
	}
}

// maxPacketData is the data of a full packet: 64 KiB less a line.
const maxPacketData = 0xFFC0

// shmRecorder is a recorder over shm that resolves socket paths, as shm
// does.
type shmRecorder struct {
	recorder
	tr *shm.Transport
}

func (r *shmRecorder) Resolve(path string) (netip.AddrPort, error) { return r.tr.Resolve(path) }

// shmTarget dials an endpoint by its target (shm://path).
type shmTarget struct{}

func (shmTarget) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	return listenT(t, srv, "shm://"+filepath.Join(t.TempDir(), "s.sock"), opts...)
}
func (shmTarget) Target(ep *erpc.Endpoint) string { return ep.Target() }
