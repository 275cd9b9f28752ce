package tcp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzParseFrames: whatever a peer sends, parseFrames never panics, never
// claims more than it was given, and the frames it passes, with their
// headers, are exactly the bytes it reports used; a length over max is
// errMalformed.
func FuzzParseFrames(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0}, 16)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 1<<18)
	f.Add([]byte("GET / HTTP/1.1\r\n"), 1<<18)
	f.Fuzz(func(t *testing.T, buf []byte, max int) {
		if max < 0 {
			max = -max
		}
		var rebuilt []byte
		used, err := parseFrames(buf, max, func(d []byte) {
			if len(d) > max {
				t.Fatalf("a %d-byte frame passed with max %d", len(d), max)
			}
			rebuilt = binary.BigEndian.AppendUint32(rebuilt, uint32(len(d)))
			rebuilt = append(rebuilt, d...)
		})
		if used < 0 || used > len(buf) || !bytes.Equal(rebuilt, buf[:used]) {
			t.Fatalf("used %d of %d bytes; frames rebuilt differ", used, len(buf))
		}
		if err != nil {
			if !errors.Is(err, errMalformed) || binary.BigEndian.Uint32(buf[used:]) <= uint32(max) {
				t.Fatalf("error %v at %d", err, used)
			}
		}
	})
}

// TestStreamSplits: frames cut into reads at random points (as TCP may
// deliver them) come out whole and in order, through the reader's
// keep-the-rest loop. Seeded, 200 streams.
func TestStreamSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		var stream []byte
		var want [][]byte
		for range 1 + r.IntN(40) {
			d := make([]byte, []int{0, 1, 3, 100, 1500, 70000}[r.IntN(6)])
			salt := byte(r.Uint32())
			for i := range d {
				d[i] = byte(i) ^ salt
			}
			want = append(want, d)
			stream = binary.BigEndian.AppendUint32(stream, uint32(len(d)))
			stream = append(stream, d...)
		}
		buf := make([]byte, frameHead+MaxDatagram)
		var got [][]byte
		filled := 0
		for off := 0; off < len(stream); {
			n := min(1+r.IntN(9000), len(stream)-off, len(buf)-filled)
			filled += copy(buf[filled:], stream[off:off+n])
			off += n
			used, err := parseFrames(buf[:filled], MaxDatagram, func(d []byte) { got = append(got, bytes.Clone(d)) })
			if err != nil {
				t.Fatal(err)
			}
			filled = copy(buf, buf[used:filled])
		}
		if filled != 0 || len(got) != len(want) {
			t.Fatalf("%d frames out of %d, %d bytes left", len(got), len(want), filled)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
	}
}
