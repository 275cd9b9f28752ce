//go:build linux

package shm

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileEmptyRecordsBudget: a peer fills its ring with records that
// carry (almost) nothing: zero-length ones, or a seeded mix of zero- and
// one-to-three-byte ones. Every record costs the listener a call of the
// engine, so every record counts against the per-turn budget: one Receive
// takes at most receiveRecords records and receiveBudget bytes of ring
// from that peer (a 16-byte header each at least), and serves an honest
// connection in the same call. Nothing is lost: later turns take the rest.
func TestHostileEmptyRecordsBudget(t *testing.T) {
	for _, mix := range []string{"empty", "tiny"} {
		t.Run(mix, func(t *testing.T) {
			tr, path := hostileListener(t, Options{})
			honest, err := Listen("", Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer honest.Close()
			to, err := honest.Resolve(path)
			if err != nil {
				t.Fatal(err)
			}
			// A ring four times the byte budget: a turn that took it
			// all would take 4 x receiveBudget bytes.
			p, st, err := rawDial(path, 4*receiveBudget, rawOpts{bell: -1, seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW})
			if p == nil {
				t.Fatalf("hostile handshake: %s %v", st, err)
			}
			defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
			r := rand.New(rand.NewPCG(8, 27))
			filled := 0
			for {
				n := 0
				if mix == "tiny" && r.IntN(2) == 0 {
					n = 1 + r.IntN(3)
				}
				if !p.out.put(make([]byte, n), nil) {
					break
				}
				filled++
			}
			if err := honest.Send([]transport.Message{{To: to, Head: []byte("honest")}}); err != nil {
				t.Fatal(err)
			}
			head := atomicU64(p.mem, hdrHead0) // what the listener handed back
			var consumed uint64
			got, turns, honestTurn := 0, 0, 0
			for got < filled && turns < 10*filled {
				turns++
				hostileRecords := 0
				tr.Receive(func(from netip.AddrPort, data []byte) {
					if from == honest.LocalAddr() {
						honestTurn = turns
						return
					}
					hostileRecords++
				})
				took := head.Load() - consumed
				consumed += took
				got += hostileRecords
				if hostileRecords > receiveRecords || took > receiveBudget+recHeader+16 {
					t.Fatalf("turn %d took %d records, %d bytes of ring from one peer (budget: %d records, %d bytes)",
						turns, hostileRecords, took, receiveRecords, receiveBudget)
				}
			}
			if honestTurn != 1 {
				t.Fatalf("the honest peer's datagram came in turn %d, want 1", honestTurn)
			}
			if got != filled {
				t.Fatalf("received %d of %d records", got, filled)
			}
			t.Logf("%d records (%d bytes of ring) in %d turns", filled, consumed, turns)
		})
	}
}
