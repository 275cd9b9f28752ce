package seal

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRoundTrip: every suite and level, payloads from empty to 1440 bytes,
// opened in order; the header says what the Sealer put there.
func TestRoundTrip(t *testing.T) {
	for _, st := range testSuites {
		for level := range levelCount {
			s, o := pair(t, st.id, uint64(level), level)
			for i, size := range []int{0, 1, 15, 16, 17, 32, 255, 1440} {
				pt := payloadFor(uint64(i), size)[:size]
				pkt := s.Seal([]byte("prefix"), 77, pt)
				if !bytes.Equal(pkt[:6], []byte("prefix")) || len(pkt) != 6+size+Overhead {
					t.Fatalf("%s: Seal did not append %d bytes", st.name, size+Overhead)
				}
				pkt = pkt[6:]
				h, err := ParseHeader(pkt)
				want := Header{Level: level, DestID: 77, PN: uint64(i)}
				if err != nil || h != want {
					t.Fatalf("%s: header %+v, %v; want %+v", st.name, h, err, want)
				}
				if !IsSealed(pkt) || bytes.Contains(pkt, pt) && size >= 16 {
					t.Fatalf("%s: plaintext visible in the packet", st.name)
				}
				got, err := o.Open([]byte("x"), pkt)
				if err != nil || !bytes.Equal(got, append([]byte("x"), pt...)) {
					t.Fatalf("%s level %v size %d: %v", st.name, level, size, err)
				}
			}
		}
	}
}

// TestInPlace: sealing with the plaintext already at dst[len+HeaderLen:]
// and opening into pkt[HeaderLen:HeaderLen] work, as the endpoint's
// zero-copy path will use them.
func TestInPlace(t *testing.T) {
	for _, st := range testSuites {
		s, o := pair(t, st.id, 3, LevelApplication)
		want := payloadFor(9, 1000)
		buf := make([]byte, HeaderLen+len(want)+TagLen)
		copy(buf[HeaderLen:], want)
		pkt := s.Seal(buf[:0], 5, buf[HeaderLen:HeaderLen+len(want)])
		if &pkt[0] != &buf[0] {
			t.Fatal("in-place Seal moved the packet")
		}
		got, err := o.Open(pkt[HeaderLen:HeaderLen], pkt)
		if err != nil || !bytes.Equal(got, want) || &got[0] != &buf[HeaderLen] {
			t.Fatalf("%s: in-place Open: %v", st.name, err)
		}
	}
}

// flipReason is the drop a single-bit flip at bit of byte off of an
// Application packet must cause.
func flipReason(off, bit int) error {
	switch {
	case off == 0:
		return ErrMagic
	case off == 1 && bit == 0: // level 2 -> 3
		return ErrBadFlags
	case off == 1 && bit == 1: // level 2 -> 0
		return ErrWrongLevel
	case off == 1 && bit >= 3:
		return ErrBadFlags
	case off == 17 && bit >= 6: // packet number above 2^62-1
		return ErrBadPN
	}
	return ErrAuth
}

// TestEveryBitFlipDropped flips each bit of sealed packets, header and body,
// one at a time: every copy is dropped for the reason its position implies
// and counted, and none moves the window (the genuine packets open after).
func TestEveryBitFlipDropped(t *testing.T) {
	for _, st := range testSuites {
		for _, size := range []int{0, 1, 40, 300} {
			s, o := pair(t, st.id, uint64(size), LevelApplication)
			s.UpdateKey() // genuine packets open only under the Opener's next keys
			pkts := sealN(s, 3, size)
			flips := 0
			for _, pkt := range pkts {
				for off := range pkt {
					for bit := range 8 {
						bad := bytes.Clone(pkt)
						bad[off] ^= 1 << bit
						want := flipReason(off, bit)
						_, err := o.Open(nil, bad)
						if err != want {
							t.Fatalf("%s size %d: flip byte %d bit %d: %v, want %v", st.name, size, off, bit, err, want)
						}
						flips++
					}
				}
			}
			d := o.Drops()
			if d.Total() != uint64(flips) || o.Opened() != 0 || o.win.top != 0 || o.Generation() != 0 {
				t.Fatalf("%d flips, drops %+v, opened %d, top %d", flips, d, o.Opened(), o.win.top)
			}
			wantAuth := uint64(flips) - 3*(8+1+5+1+2)
			if d.Auth != wantAuth || d.WrongLevel != 3 || d.BadHeader != 3*(8+1+5+2) {
				t.Fatalf("%s size %d: drops %+v, want %d auth", st.name, size, d, wantAuth)
			}
			for _, pkt := range pkts {
				mustOpen(t, o, pkt)
			}
		}
	}
}

// TestWrongLevel: a packet sealed at one level does not open at another,
// neither as it is (WrongLevel) nor with its level byte rewritten (Auth:
// the level is associated data), even under the very same secret.
func TestWrongLevel(t *testing.T) {
	for _, st := range testSuites {
		secret := testSecret(t, st.id, 11)
		for from := range levelCount {
			s, _ := NewSealer(st.id, secret, from)
			for to := range levelCount {
				if to == from {
					continue
				}
				o, _ := NewOpener(st.id, secret, to)
				pkt := s.Seal(nil, 1, payloadFor(0, 64))
				mustDrop(t, o, pkt, ErrWrongLevel)
				pkt[1] = pkt[1]&^flagLevelMask | byte(to)
				mustDrop(t, o, pkt, ErrAuth)
				if d := o.Drops(); d.WrongLevel != 1 || d.Auth != 1 {
					t.Fatalf("%v->%v: %+v", from, to, d)
				}
			}
		}
	}
}

// TestWrongKeys: another secret, another suite's derivation, or the other
// direction's keys never open a packet.
func TestWrongKeys(t *testing.T) {
	s, _ := pair(t, testSuites[0].id, 1, LevelApplication)
	_, other := pair(t, testSuites[0].id, 2, LevelApplication)
	mustDrop(t, other, s.Seal(nil, 1, payloadFor(0, 64)), ErrAuth)
	c, sv := InitialSecrets(5)
	client, _ := NewSealer(InitialSuite, c, LevelInitial)
	server, _ := NewSealer(InitialSuite, sv, LevelInitial)
	clientOpens, _ := NewOpener(InitialSuite, sv, LevelInitial)
	mustDrop(t, clientOpens, client.Seal(nil, 5, payloadFor(0, 64)), ErrAuth)
	mustOpen(t, clientOpens, server.Seal(nil, 5, payloadFor(0, 64)))
}

// TestParseHeaderRejects: short, wrong magic, invalid flags, out-of-range
// packet numbers.
func TestParseHeaderRejects(t *testing.T) {
	s, _ := pair(t, testSuites[0].id, 1, LevelHandshake)
	good := s.Seal(nil, 0x0102030405060708, nil)
	if len(good) != Overhead {
		t.Fatalf("empty packet is %d bytes", len(good))
	}
	for n := range Overhead {
		if _, err := ParseHeader(good[:n]); err != ErrShort || IsSealed(good[:n]) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	mut := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	for i, c := range []struct {
		pkt  []byte
		want error
	}{
		{mut(func(b []byte) { b[0] = 0xE7 }), ErrMagic},
		{mut(func(b []byte) { b[1] = 3 }), ErrBadFlags},
		{mut(func(b []byte) { b[1] |= 0x80 }), ErrBadFlags},
		{mut(func(b []byte) { b[17] = 0x40 }), ErrBadPN},
	} {
		if _, err := ParseHeader(c.pkt); err != c.want {
			t.Errorf("case %d: %v, want %v", i, err, c.want)
		}
	}
	h, err := ParseHeader(good)
	if err != nil || h.DestID != 0x0102030405060708 || h.Level != LevelHandshake {
		t.Fatalf("%+v %v", h, err)
	}
	if fmt.Sprint(LevelInitial, LevelHandshake, LevelApplication, Level(3)) != "initial handshake application invalid" {
		t.Fatal("Level.String")
	}
}
