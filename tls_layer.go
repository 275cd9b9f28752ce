package erpc

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/internal/secure"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
)

// tlsLayer is an endpoint's TLS associations (WithTLS), between its
// transport and its engine: received protected packets are routed by
// destination ID to their association, opened and handed to the engine
// tagged with the association's ID; the engine's packets are sealed by
// the association their tag names. The loop owns it.
type tlsLayer struct {
	cfg         secure.Config
	byID        map[uint64]*tlsAssoc // every association, by our ID
	byInitial   map[uint64]*tlsAssoc // server: by the client's chosen Initial ID
	dialing     map[uint64]*tlsAssoc // client: by our chosen Initial ID (for a plaintext server's refusal)
	opened      []byte               // scratch: an opened packet
	arena       []byte               // the sealed packets of one flush
	handshakes  int                  // server associations not yet established
	sessionless int                  // server associations established, without an engine session yet (tls_admit.go)
	starting    []*tlsAssoc          // associations with handshake packets to step on after this batch
	nextSweep   proto.Time
	flushes     uint64 // tlsSeal calls: ForceKeyUpdate updates once per flush
	limits      tlsLimits
	stats       tlsStats
}

type tlsLimits struct {
	handshake, idle, linger time.Duration
	sessionless             time.Duration // an established server association without an engine session
}

// maxHandshakes bounds the server associations still handshaking: past
// it a new client's Initial is dropped (a flood of forged ones costs
// that much state at most).
const maxHandshakes = 1024

type tlsStats struct {
	handshakes, failures, openFailures, replays, plaintext, unknown, keyUpdates uint64
}

// tlsAssoc is one association and what the endpoint keeps beside it.
type tlsAssoc struct {
	a          *secure.Assoc
	addr       netip.AddrPort // where handshake packets go: the server, or the client's last address
	sess       *Session       // client: the session it protects
	held       []byte         // client: the engine's last packet before the keys (its connect)
	heldPath   uint8
	lastActive proto.Time
	failed     bool
	up         bool
	down       bool // its engine session ended: forgotten after the linger
	busy       bool // a goroutine has a (tls_async.go): the loop leaves it alone
	ticketing  bool // client: a goroutine stores a session ticket (ReceiveAppCrypto)
	tickets    [][]byte
	state      tls.ConnectionState // once up
	hasSession bool                // server: its client opened an engine session
	unsent     [][]byte            // server: handshake datagrams over the unvalidated address's budget
	sentBytes  uint64              // server: sent to the client before its address was validated
	rcvdBytes  uint64              // server: received from the client (handshake levels)
	forcedAt   uint64              // the flush whose ForceKeyUpdate updated it
	starting   bool                // in tlsLayer.starting
	backlog    []queuedPacket
	sendGen    uint64 // key generations seen, for Stats.TLSKeyUpdates
	recvGen    uint64
}

func newTLSLayer(o *options, maxDatagram int) *tlsLayer {
	log := o.logger
	c := secure.Guard(o.tlsConfig, func(callback string, p any) { // checked by options.check
		log.Error(fmt.Sprintf("erpc: the WithTLS config's %s panicked: %v (that handshake fails)\n%s", callback, p, debug.Stack()),
			"callback", callback, "panic", fmt.Sprint(p))
	})
	fto := o.engine.FailureTimeout
	if fto <= 0 {
		fto = 2 * time.Second
	}
	idle := o.engine.IdleTimeout
	if idle <= 0 {
		idle = 30 * time.Second
	}
	return &tlsLayer{
		cfg:       secure.Config{TLS: c, MaxDatagram: maxDatagram, Params: []byte{'e', 'r', 'p', 'c', wire.Version}},
		byID:      make(map[uint64]*tlsAssoc),
		byInitial: make(map[uint64]*tlsAssoc),
		dialing:   make(map[uint64]*tlsAssoc),
		limits:    tlsLimits{handshake: 4 * fto, idle: 2 * idle, linger: fto, sessionless: 2 * fto},
	}
}

// newID is a random association ID no association of ours has.
func (l *tlsLayer) newID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		id := binary.LittleEndian.Uint64(b[:])
		if _, taken := l.byID[id]; id != 0 && !taken {
			return id
		}
	}
}

// dial starts the association of a client session's new engine session
// and returns its ID, the engine session's tag.
func (l *tlsLayer) dial(now proto.Time, s *Session) (uint64, error) {
	id, initial := l.newID(), l.newID()
	cfg := &l.cfg
	if cfg.TLS.ServerName == "" && !cfg.TLS.InsecureSkipVerify {
		c := *cfg
		c.TLS = cfg.TLS.Clone()
		c.TLS.ServerName = s.tlsName
		if c.TLS.ServerName == "" {
			c.TLS.ServerName = targetHost(s.target)
		}
		cfg = &c
	}
	// Start writes the ClientHello, calling the config's
	// ClientSessionCache: off the loop (tlsStartClient); the engine's
	// connect is held meanwhile, and the flight goes when Start is done.
	t := &tlsAssoc{a: secure.PrepareClient(cfg, id, initial), addr: s.addr, sess: s, lastActive: now}
	l.byID[id] = t
	l.dialing[initial] = t
	return id, nil
}

// receive handles one datagram of a TLS endpoint.
func (ep *Endpoint) tlsReceive(from netip.AddrPort, data []byte) {
	l, now := ep.sec, ep.loop.now
	if !seal.IsSealed(data) {
		ep.tlsPlaintext(now, from, data)
		return
	}
	h, err := seal.ParseHeader(data)
	if err != nil {
		l.stats.openFailures++
		return
	}
	t := l.byID[h.DestID]
	if t == nil && h.Level == seal.LevelInitial && ep.handlers != nil {
		if t = l.byInitial[h.DestID]; t == nil && l.admitInitial(data) {
			t = ep.tlsAccept(now, h.DestID)
		}
		if t == nil {
			return // counted by admitInitial or tlsAccept
		}
	}
	if t == nil {
		l.stats.unknown++
		return
	}
	t.noteReceived(data, h.Level)
	if t.busy || t.starting { // a handshake step runs, or will, off the loop: after it
		t.queue(from, data)
		return
	}
	if h.Level == seal.LevelApplication {
		inner, err := t.a.OpenApp(l.opened[:0], data)
		if err != nil {
			l.countDrop(err)
			return
		}
		l.opened = inner[:0]
		t.lastActive = now
		if len(inner) > 0 && inner[0] == secure.AppCryptoMarker {
			ep.tlsTicket(t, inner) // a session ticket: off the loop
			return
		}
		ep.eng.ReceiveTagged(now, from, inner, t.a.LocalID)
		return
	}
	if t.sess == nil {
		t.addr = from
	}
	if !t.up && !t.failed { // crypto/tls's work: signing, verifying, the user's callbacks
		t.queue(from, data) // with the rest of its flight, after the batch (tlsStartSteps)
		if !t.starting {
			t.starting = true
			l.starting = append(l.starting, t)
		}
		return
	}
	if err := t.a.Receive(&h, data); err != nil { // established: no crypto/tls work left
		l.countDrop(err)
		return
	}
	t.lastActive = now
	ep.tlsProgress(now, t)
}

func (l *tlsLayer) countDrop(err error) {
	if errors.Is(err, seal.ErrReplay) || errors.Is(err, seal.ErrTooOld) {
		l.stats.replays++
	} else {
		l.stats.openFailures++
	}
}

// tlsAccept makes a server association for a client's first Initial.
func (ep *Endpoint) tlsAccept(now proto.Time, initial uint64) *tlsAssoc {
	l := ep.sec
	l.sweep(now, true)
	if l.handshakes >= maxHandshakes {
		l.stats.unknown++ // no slot: dropped, as for no association
		return nil
	}
	id := l.newID()
	a, err := secure.NewServer(&l.cfg, id, initial)
	if err != nil {
		return nil
	}
	t := &tlsAssoc{a: a, lastActive: now}
	l.byID[id], l.byInitial[initial] = t, t
	l.handshakes++
	return t
}

// tlsProgress sends what a handshake step produced and acts on its
// outcome: a failure fails the client's dial, an established client
// sends the connect it held.
func (ep *Endpoint) tlsProgress(now proto.Time, t *tlsAssoc) {
	l := ep.sec
	ep.tlsSendHandshake(t, t.a.TakeOutput())
	switch {
	case t.failed:
	case t.a.Err() != nil:
		t.failed = true
		l.stats.failures++
		if t.sess == nil {
			l.handshakes--
		} else {
			t.sess.tlsFailed(now, t.a.LocalID, t.a.Err(), t.a.PeerClosed())
		}
	case !t.up && t.a.Established():
		t.up = true
		// Kept: crypto/tls's ConnectionState takes a lock a ticket's
		// storing holds (tlsTicket), around the user's cache.
		t.state = t.a.ConnectionState()
		l.stats.handshakes++
		if t.sess == nil {
			l.handshakes--
			l.established(t)
			// Its session ticket, written off the loop by the step that
			// established it (WrapSession is the user's code).
			for _, p := range t.a.TakeAppCrypto() {
				ep.extra = append(ep.extra, transport.Message{To: t.addr, Head: t.a.SealApp(nil, p)})
			}
		}
		if t.held != nil {
			ep.extra = append(ep.extra, transport.Message{To: t.addr, Head: t.a.SealApp(nil, t.held), Path: t.heldPath})
			t.held = nil
		}
	}
}

// tlsPlaintext handles a plaintext datagram at a TLS endpoint: dropped
// and counted, but for two refusals. A plaintext client's connect gets
// a plaintext connect-ack refusing it (CodeTLSRequired); a plaintext
// server's refusal of one of our Initials (CodeTLSUnsupported, echoing
// its ID, from the address we dialed) fails that dial, and only that.
func (ep *Endpoint) tlsPlaintext(now proto.Time, from netip.AddrPort, data []byte) {
	l := ep.sec
	l.stats.plaintext++
	var h wire.Header
	payload, err := h.Parse(data)
	if err != nil {
		return
	}
	switch {
	case h.Type == wire.TypeConnect && ep.handlers != nil:
		var c wire.Connect
		if c.Parse(payload) != nil || h.Token == 0 {
			return
		}
		r := wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeTLSRequired, Session: c.Session, Token: h.Token, TxSeq: h.TxSeq}
		ep.sendPlain(from, &r)
	case h.Type == wire.TypeConnectAck && h.Code == wire.CodeTLSUnsupported:
		t := l.dialing[h.ReqNum]
		if t != nil && t.addr == from && !t.up && !t.failed {
			t.a.Fail(errors.New("the server does not speak TLS (it is a plaintext erpc endpoint: dial it without WithTLS, if that is safe)"))
			t.a.TakeOutput() // nothing to tell a server that does not speak TLS
			ep.tlsProgress(now, t)
		}
	}
}

// plainRefuseTLS answers a protected Initial at a plaintext endpoint:
// this endpoint does not speak TLS (CodeTLSUnsupported, echoing the
// packet's destination ID). Anything else protected is dropped.
func (ep *Endpoint) plainRefuseTLS(from netip.AddrPort, data []byte) {
	h, err := seal.ParseHeader(data)
	if err != nil || h.Level != seal.LevelInitial || ep.handlers == nil {
		return
	}
	r := wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeTLSUnsupported, ReqNum: h.DestID}
	ep.sendPlain(from, &r)
}

// sendPlain queues a plaintext connect-ack outside the engine.
// Its connect payload is empty (zeros), as an engine's refusal's is.
func (ep *Endpoint) sendPlain(to netip.AddrPort, h *wire.Header) {
	b := make([]byte, wire.HeaderLen+wire.ConnectLen)
	h.Put(b)
	(&wire.Connect{}).Put(b[wire.HeaderLen:])
	ep.extra = append(ep.extra, transport.Message{To: to, Head: b})
}

// sweep forgets associations whose time is up: failed ones after a
// linger (to repeat the close to a peer that missed it), handshakes that
// never finished, and established ones idle for twice the server's idle
// timeout (their sessions are gone: a live one pings). force sweeps even
// before the next sweep is due.
func (l *tlsLayer) sweep(now proto.Time, force bool) {
	if now < l.nextSweep && !force {
		return
	}
	l.nextSweep = now.Add(time.Second)
	for id, t := range l.byID {
		if t.offLoop() {
			continue
		}
		age := now.Sub(t.lastActive)
		sessionless := t.sess == nil && t.up && !t.hasSession && !t.down
		if ((t.failed || t.down) && age > l.limits.linger) || (!t.up && !t.failed && age > l.limits.handshake) ||
			(sessionless && age > l.limits.sessionless) || age > l.limits.idle {
			l.forget(id, t)
		}
	}
}

func (l *tlsLayer) forget(id uint64, t *tlsAssoc) {
	delete(l.byID, id)
	delete(l.byInitial, t.a.InitialID)
	delete(l.dialing, t.a.InitialID)
	if t.sess == nil && !t.up && !t.failed {
		l.handshakes--
	}
	if t.sess == nil && t.up && !t.hasSession {
		l.sessionless--
	}
	t.a.Close()
}

// sessionDown notes that the engine session of association tag ended:
// the association lingers a little (the session's last packets, a
// disconnect or a closing notice, are sealed on their way out), then the
// sweep forgets it.
func (l *tlsLayer) sessionDown(now proto.Time, tag uint64) {
	if t := l.byID[tag]; t != nil {
		t.down, t.lastActive = true, now
	}
}

// tlsFailed fails the dial (or reconnect) whose association failed its
// handshake: the engine session ends, and its error says why.
func (s *Session) tlsFailed(now proto.Time, tag uint64, err error, byPeer bool) {
	if !s.live || s.tag != tag {
		return
	}
	msg := "TLS handshake with " + s.addr.String() + " failed: " + err.Error()
	if byPeer {
		msg = "TLS handshake refused by the server at " + s.addr.String() + ": " + err.Error()
	}
	s.tlsErr = &Error{Code: Unauthenticated, Msg: msg, Cause: err}
	_ = s.ep.eng.Close(now, s.sid)
}

// errTLSConfig is the error of a WithTLS config erpc cannot use.
func errTLSConfig(err error) *Error {
	return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("WithTLS: %v", err), Cause: err}
}

// targetHost is a dial target's host, the server name a TLS client
// verifies when its config names none (as gRPC's credentials do).
func targetHost(target string) string {
	_, rest := splitTarget(target)
	if h, _, err := net.SplitHostPort(rest); err == nil {
		return h
	}
	return rest
}

// tlsStateOf is the TLS state of the association tag names (a session
// event's SessionTag), nil for none or one not yet established: what a
// session's PeerAuth carries (peerauth.go).
func (ep *Endpoint) tlsStateOf(tag uint64) *tls.ConnectionState {
	if ep.sec == nil {
		return nil
	}
	t := ep.sec.byID[tag]
	if t == nil || !t.up || t.failed {
		return nil
	}
	st := t.state
	return &st
}
