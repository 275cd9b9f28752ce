package seal

import "errors"

// Errors of Open, one per drop reason; package values, so a drop never
// allocates.
var (
	ErrAuth       = errors.New("seal: packet failed authentication")
	ErrReplay     = errors.New("seal: packet number already opened (replay)")
	ErrTooOld     = errors.New("seal: packet number below the replay window")
	ErrWrongLevel = errors.New("seal: packet sealed at another level")
	ErrOldKey     = errors.New("seal: packet under discarded keys")
)

// Drops counts the packets an Opener dropped, by reason.
type Drops struct {
	Auth       uint64 // failed authentication (corrupt, forged, wrong keys)
	Replay     uint64 // packet number already opened
	TooOld     uint64 // packet number below the replay window
	BadHeader  uint64 // outer header malformed (ParseHeader's errors)
	WrongLevel uint64 // header names another level than the Opener's
	OldKey     uint64 // key phase of a generation whose keys are discarded
}

// Total is the number of packets dropped for any reason.
func (d Drops) Total() uint64 {
	return d.Auth + d.Replay + d.TooOld + d.BadHeader + d.WrongLevel + d.OldKey
}

// Opener opens the other direction's packets at one level. It keeps a
// replay window and follows the peer's key updates. It is not safe for
// concurrent use.
type Opener struct {
	suite suite
	level Level
	// cur opens the current generation; next (derived in advance, so a
	// forged packet never costs a derivation) the one after; prev, while
	// havePrev, the one before.
	cur, next, prev keyGen
	havePrev        bool
	gen             uint64
	// curStart is the lowest packet number opened under cur: every packet
	// of an earlier generation is numbered below it. prevStart is the
	// same for the generation before (valid when gen > 0).
	curStart, prevStart uint64
	win                 window
	drops               Drops
	opened              uint64
	nonce               [ivLen]byte
}

// NewOpener returns an Opener for suite keyed from the peer's traffic
// secret (copied), at level. Suites as for NewSealer.
func NewOpener(suite uint16, secret []byte, level Level) (*Opener, error) {
	s, g, err := newKeys(suite, secret, level)
	if err != nil {
		return nil, err
	}
	o := &Opener{suite: s, level: level, cur: g}
	o.next = g.next(s)
	return o, nil
}

// Open authenticates and decrypts one protected packet and appends its
// plaintext to dst. It allocates nothing when dst has room for
// len(pkt)-Overhead bytes. dst may be pkt[HeaderLen:HeaderLen] (opening in
// place; a packet that fails authentication then has its body zeroed); no
// other overlap. A packet it drops (malformed, another level,
// under discarded keys, below the window, a replay, or failing
// authentication) returns dst unchanged and one of the package's Err
// values, and is counted in Drops. Only a packet that authenticates moves
// the replay window or the key phase.
func (o *Opener) Open(dst, pkt []byte) ([]byte, error) {
	h, err := ParseHeader(pkt)
	if err != nil {
		o.drops.BadHeader++
		return dst, err
	}
	if h.Level != o.level {
		o.drops.WrongLevel++
		return dst, ErrWrongLevel
	}
	keys, promote, err := o.keysFor(h)
	if err != nil {
		o.drops.OldKey++
		return dst, err
	}
	if err := o.win.check(h.PN); err != nil {
		if err == ErrReplay {
			o.drops.Replay++
		} else {
			o.drops.TooOld++
		}
		return dst, err
	}
	keys.nonce(&o.nonce, h.PN)
	out, err := keys.aead.Open(dst, o.nonce[:], pkt[HeaderLen:], pkt[:HeaderLen])
	if err != nil {
		o.drops.Auth++
		return dst, ErrAuth
	}
	o.win.mark(h.PN)
	o.opened++
	o.afterOpen(h.PN, keys, promote)
	return out, nil
}

// keysFor picks the keys a packet can open under, from its key phase and
// packet number; promote says they are the next generation's.
func (o *Opener) keysFor(h Header) (keys *keyGen, promote bool, err error) {
	curPhase := o.gen&1 == 1
	if h.KeyPhase == curPhase {
		// Two generations back has the same phase; it numbered all its
		// packets below the previous generation's.
		if o.gen > 0 && h.PN < o.prevStart {
			return nil, false, ErrOldKey
		}
		return &o.cur, false, nil
	}
	if h.PN >= o.curStart {
		return &o.next, true, nil
	}
	// The other phase, numbered before the current generation began: the
	// previous generation's (or, failing authentication, an older one's),
	// if its keys are still kept. prevStart is no bound here: a packet of
	// the previous generation may be numbered below all of it opened yet.
	if !o.havePrev {
		return nil, false, ErrOldKey
	}
	return &o.prev, false, nil
}

// afterOpen follows a packet that opened: a next-generation packet moves
// the keys on; a current one may lower curStart; and the previous keys are
// discarded once the window has moved a full window past the current
// generation's first packet (nothing they could open is in it then).
func (o *Opener) afterOpen(pn uint64, keys *keyGen, promote bool) {
	switch {
	case promote:
		o.prev, o.cur = o.cur, o.next
		o.havePrev = true
		o.prevStart, o.curStart = o.curStart, pn
		o.gen++
		o.next = o.cur.next(o.suite)
	case keys == &o.cur && pn < o.curStart:
		o.curStart = pn
	}
	if o.havePrev && o.win.lowEdge() >= o.curStart {
		o.prev = keyGen{}
		o.havePrev = false
	}
}

// Drops returns the counts of packets dropped so far, by reason.
func (o *Opener) Drops() Drops { return o.drops }

// Opened is the number of packets opened.
func (o *Opener) Opened() uint64 { return o.opened }

// Generation is the peer's key generation the Opener is at.
func (o *Opener) Generation() uint64 { return o.gen }

// Level is the encryption level the Opener opens.
func (o *Opener) Level() Level { return o.level }
