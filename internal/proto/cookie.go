package proto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	mrand "math/rand/v2"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// cookieBucket is the coarse time a retry cookie's MAC covers. A cookie
// minted in one bucket is accepted in it and the next, so it lives 2 to
// 4 s: longer than the round trip its echo takes, and a copy seen on the
// path is soon worthless.
const cookieBucket = 2 * time.Second

// cookieJar mints and checks the retry cookies of a server under a connect
// flood: the first CookieLen bytes of HMAC-SHA256, under a key drawn for
// each time bucket, over the client's address and port, its session number
// and token, and the bucket. A forger who never receives at the address it
// claims cannot learn a cookie for it, and guessing one succeeds once in
// 2^64 tries.
//
// The keys come from a ChaCha8 stream of their own, seeded from
// crypto/rand (or Config.CookieSeed in tests), not from Config.Random: the
// tokens that Random draws are sent to every client, and a test that sets
// Random to a seeded generator would otherwise make the keys predictable.
type cookieJar struct {
	keys   *mrand.ChaCha8
	bucket int64     // the bucket cur is keyed for
	cur    hash.Hash // HMAC under bucket's key; nil before the first use
	prev   hash.Hash // under bucket-1's key; nil if that bucket had none
	in     [34]byte  // scratch: the MAC's input
	sum    [sha256.Size]byte
	// The cookies that made a session in bucket and in bucket-1: a
	// cookie makes one session, and a copy of its connect that comes
	// after that session ended (a network duplicate, a replay from the
	// path) counts as having none. A cookie is valid two buckets at most,
	// so two sets cover its life; they hold one entry per cookie-proven
	// connect of the last 2 to 4 s, each of which made a session.
	spent, spentPrev map[wire.Cookie]struct{}
}

func newCookieJar(seed [32]byte) cookieJar {
	if seed == ([32]byte{}) {
		_, _ = rand.Read(seed[:])
	}
	return cookieJar{keys: mrand.NewChaCha8(seed)}
}

// rotate keys the bucket now falls in, keeping the previous bucket's key
// if that bucket just ended. A key lives two buckets at most.
func (j *cookieJar) rotate(now Time) {
	b := int64(now) / int64(cookieBucket)
	if j.cur != nil && b <= j.bucket {
		return // a clock that stepped back keeps the newest key
	}
	j.prev = nil
	if j.cur != nil && b == j.bucket+1 {
		j.prev = j.cur
		j.spent, j.spentPrev = j.spentPrev, j.spent
	} else {
		clear(j.spentPrev)
	}
	clear(j.spent)
	var key [32]byte
	_, _ = j.keys.Read(key[:])
	j.cur, j.bucket = hmac.New(sha256.New, key[:]), b
}

// mint returns the cookie a client at from, with session number num and
// token, must echo.
func (j *cookieJar) mint(now Time, from netip.AddrPort, num, token uint32) wire.Cookie {
	j.rotate(now)
	return j.mac(j.cur, j.bucket, from, num, token)
}

// valid reports whether c is a cookie this engine minted for that client
// in the current or the previous bucket.
func (j *cookieJar) valid(now Time, from netip.AddrPort, num, token uint32, c wire.Cookie) bool {
	j.rotate(now)
	if want := j.mac(j.cur, j.bucket, from, num, token); hmac.Equal(want[:], c[:]) {
		return true
	}
	if j.prev == nil {
		return false
	}
	want := j.mac(j.prev, j.bucket-1, from, num, token)
	return hmac.Equal(want[:], c[:])
}

// spend records that valid cookie c makes a session now, and reports
// false if it has made one already. Call it after valid, which keeps the
// sets in step with the buckets.
func (j *cookieJar) spend(c wire.Cookie) bool {
	if _, ok := j.spent[c]; ok {
		return false
	}
	if _, ok := j.spentPrev[c]; ok {
		return false
	}
	if j.spent == nil {
		j.spent = make(map[wire.Cookie]struct{})
	}
	j.spent[c] = struct{}{}
	return true
}

func (j *cookieJar) mac(h hash.Hash, bucket int64, from netip.AddrPort, num, token uint32) (c wire.Cookie) {
	a := from.Addr().As16() // an IPv4 address as IPv4-mapped; the zone left out
	copy(j.in[:16], a[:])
	binary.LittleEndian.PutUint16(j.in[16:], from.Port())
	binary.LittleEndian.PutUint32(j.in[18:], num)
	binary.LittleEndian.PutUint32(j.in[22:], token)
	binary.LittleEndian.PutUint64(j.in[26:], uint64(bucket))
	h.Reset()
	h.Write(j.in[:])
	copy(c[:], h.Sum(j.sum[:0]))
	return c
}
