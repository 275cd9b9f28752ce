package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func sampleHeader() Header {
	return Header{
		Type: TypeResp, Flags: FlagPending, Code: 7, Path: 3, HoldMicros: 1234,
		Session: 0xA1B2C3D4, Token: 0x01020304, ReqType: 0xDEADBEEF,
		MsgSize: 8 << 20, PktIndex: 5859, TxSeq: 0xFFFFFFFE, ReqNum: 1<<44 + 17,
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := sampleHeader()
	pkt := AppendHeader(nil, &h)
	pkt = append(pkt, "payload"...)
	if len(pkt) != HeaderLen+7 {
		t.Fatalf("encoded length %d", len(pkt))
	}
	var got Header
	payload, err := got.Parse(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, h)
	}
	if string(payload) != "payload" {
		t.Fatalf("payload %q", payload)
	}
}

// TestHeaderLayout pins the documented byte offsets, so a refactor that
// reorders fields breaks here and not in production against an old peer.
func TestHeaderLayout(t *testing.T) {
	h := Header{Type: TypeReq, Flags: 0x40, Code: 0x55, Path: 0x66, HoldMicros: 0x0807,
		Session: 0x0C0B0A09, Token: 0x100F0E0D, ReqType: 0x14131211, MsgSize: 0x18171615,
		PktIndex: 0x1C1B1A19, TxSeq: 0x201F1E1D, ReqNum: 0x2827262524232221}
	var b [HeaderLen]byte
	h.Put(b[:])
	want := []byte{0xE7, Version, byte(TypeReq), 0x40, 0x55, 0x66, 0x07, 0x08,
		0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14,
		0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("layout\n got % x\nwant % x", b[:], want)
	}
}

func TestHeaderParseErrors(t *testing.T) {
	valid := func(typ Type, payload int) []byte {
		h := Header{Type: typ}
		return append(AppendHeader(nil, &h), make([]byte, payload)...)
	}
	mutate := func(b []byte, i int, v byte) []byte { b[i] = v; return b }
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"one short", valid(TypeReq, 0)[:HeaderLen-1], ErrShort},
		{"magic", mutate(valid(TypeReq, 0), 0, 0x45), ErrMagic},
		{"version 1", mutate(valid(TypeReq, 0), 1, 1), ErrVersion},
		{"version 3", mutate(valid(TypeReq, 0), 1, 3), ErrVersion},
		{"type zero", mutate(valid(TypeReq, 0), 2, 0), ErrType},
		{"type past end", mutate(valid(TypeReq, 0), 2, byte(typeEnd)), ErrType},
		{"cr with payload", valid(TypeCR, 1), ErrLength},
		{"rfr with payload", valid(TypeRFR, 8), ErrLength},
		{"connect short", valid(TypeConnect, ConnectLen-1), ErrLength},
		{"connect long", valid(TypeConnectAck, ConnectLen+CookieLen+1), ErrLength},
		{"req too long", valid(TypeReq, 1<<16+1), ErrLength},
		{"req ok", valid(TypeReq, 1400), nil},
		{"ping ok", valid(TypePing, 0), nil},
		{"connect ok", valid(TypeConnect, ConnectLen), nil},
		{"connect with a cookie ok", valid(TypeConnect, ConnectLen+CookieLen), nil},
	}
	for _, tt := range tests {
		var h Header
		if _, err := h.Parse(tt.pkt); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestTypeDirection(t *testing.T) {
	for typ := TypeReq; typ < typeEnd; typ++ {
		if typ.String() == "unknown" || typ.String() == "invalid" {
			t.Errorf("type %d has no name", typ)
		}
	}
	client := map[Type]bool{TypeReq: true, TypeRFR: true, TypeCancel: true,
		TypeConnect: true, TypeDisconnect: true, TypePing: true, TypePathResponse: true}
	for typ := TypeReq; typ < typeEnd; typ++ {
		if typ.FromClient() != client[typ] {
			t.Errorf("%v.FromClient() = %v", typ, typ.FromClient())
		}
	}
}

func TestNumPackets(t *testing.T) {
	for _, tt := range []struct{ size, per, want int }{
		{0, 1432, 1}, {1, 1432, 1}, {1432, 1432, 1}, {1433, 1432, 2},
		{8 << 20, 1432, 5858}, {2864, 1432, 2},
	} {
		if got := NumPackets(tt.size, tt.per); got != tt.want {
			t.Errorf("NumPackets(%d, %d) = %d, want %d", tt.size, tt.per, got, tt.want)
		}
	}
}

func TestConnectRoundTrip(t *testing.T) {
	c := Connect{Session: 77, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: 1432}
	var b [ConnectLen]byte
	c.Put(b[:])
	var got Connect
	if err := got.Parse(b[:]); err != nil || got != c {
		t.Fatalf("got %+v, %v", got, err)
	}
	bad := []Connect{
		{Window: 0, Credits: 32, MaxData: 1432},
		{Window: 8, Credits: 0, MaxData: 1432},
		{Window: 8, Credits: 32, MaxData: MinConnectData - 1},
	}
	for _, c := range bad {
		c.Put(b[:])
		if err := got.Parse(b[:]); !errors.Is(err, ErrConnect) {
			t.Errorf("%+v: got %v", c, err)
		}
	}
	if err := got.Parse(b[:3]); !errors.Is(err, ErrLength) {
		t.Errorf("short connect: %v", err)
	}
}

// TestConnectCookie: a payload CookieLen longer carries a cookie, which
// parses back as it was put; any length but the two is refused.
func TestConnectCookie(t *testing.T) {
	c := Connect{Session: 77, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: 1432,
		Cookie: Cookie{1, 2, 3, 4, 5, 6, 7, 8}, HasCookie: true}
	b := make([]byte, c.Len())
	c.Put(b)
	copy(b[ConnectLen:], c.Cookie[:])
	var got Connect
	if err := got.Parse(b); err != nil || got != c {
		t.Fatalf("got %+v, %v; want %+v", got, err, c)
	}
	// A plain connect parsed into the same struct loses the cookie.
	if err := got.Parse(b[:ConnectLen]); err != nil || got.HasCookie || got.Cookie != (Cookie{}) {
		t.Fatalf("without a cookie: %+v, %v", got, err)
	}
	for _, n := range []int{ConnectLen + 1, ConnectLen + CookieLen - 1, ConnectLen + CookieLen + 1} {
		if err := got.Parse(append(b, make([]byte, CookieLen)...)[:n]); !errors.Is(err, ErrLength) {
			t.Errorf("a %d-byte connect: %v", n, err)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	h := sampleHeader()
	buf := make([]byte, 0, 2*HeaderLen)
	var out Header
	allocs := testing.AllocsPerRun(1000, func() {
		pkt := AppendHeader(buf[:0], &h)
		if _, err := out.Parse(pkt); err != nil {
			t.Fatal(err)
		}
		var c Connect
		_ = c.Parse(pkt[:ConnectLen])
	})
	if allocs != 0 {
		t.Fatalf("encode+parse allocates %.1f times", allocs)
	}
}

func BenchmarkHeaderPutParse(b *testing.B) {
	h := sampleHeader()
	var buf [HeaderLen]byte
	var out Header
	b.ReportAllocs()
	b.SetBytes(HeaderLen)
	for b.Loop() {
		h.Put(buf[:])
		if _, err := out.Parse(buf[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTimeoutEncoding: a timeout never grows in transit (the server's
// deadline is never later than the client's), loses at most 0.1 % above
// 2 ms, is exact below, and saturates instead of wrapping.
func TestTimeoutEncoding(t *testing.T) {
	for _, d := range []time.Duration{0, 500 * time.Nanosecond, time.Microsecond, 2047 * time.Microsecond,
		2048 * time.Microsecond, 100 * time.Millisecond, 1234567 * time.Microsecond, time.Hour, 50 * 24 * time.Hour} {
		got := DecodeTimeout(EncodeTimeout(d))
		if got > d {
			t.Errorf("%v decodes as %v: later than sent", d, got)
		}
		floor := d.Truncate(time.Microsecond)
		if floor < 2048*time.Microsecond && got != floor {
			t.Errorf("%v decodes as %v, want exactly %v", d, got, floor)
		}
		if lost := floor - got; lost > floor/1024 {
			t.Errorf("%v decodes as %v: lost %v, more than 0.1 %%", d, got, lost)
		}
	}
	if got := DecodeTimeout(EncodeTimeout(1000 * 24 * time.Hour)); got < 50*24*time.Hour {
		t.Errorf("1000 days decodes as %v: the encoding wrapped instead of saturating", got)
	}
	if EncodeTimeout(-time.Second) != 0 {
		t.Errorf("a negative timeout must encode as expired")
	}
	prev := time.Duration(-1)
	for v := uint32(0); v <= 0xFFFF; v++ { // monotonic within each exponent's range of mantissas
		d := DecodeTimeout(uint16(v))
		if v&timeoutMantMask >= 1<<(timeoutMantBits-1) && d <= prev {
			t.Fatalf("decode not increasing at %#x: %v after %v", v, d, prev)
		}
		if v&timeoutMantMask >= 1<<(timeoutMantBits-1) {
			prev = d
		}
	}
}
