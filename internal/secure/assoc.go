package secure

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/erpc-go/erpc/internal/seal"
)

// ALPN is erpc's application protocol name, required on both sides.
const ALPN = "erpc/1"

// Config is what every association of an endpoint shares.
type Config struct {
	TLS         *tls.Config // with ALPN among its NextProtos (see CheckConfig)
	MaxDatagram int         // the largest datagram the transport carries
	Params      []byte      // erpc's session parameters, sent as the TLS transport parameters
}

// CheckConfig returns the tls.Config an association uses for cfg: a
// clone with erpc's ALPN as its only protocol when cfg names none, or cfg
// itself (cloned) when its NextProtos include erpc's. A config that names
// protocols but not erpc's is refused: it was meant for something else.
func CheckConfig(cfg *tls.Config) (*tls.Config, error) {
	if cfg == nil {
		return nil, errors.New("a nil *tls.Config")
	}
	c := cfg.Clone()
	switch {
	case len(c.NextProtos) == 0:
		c.NextProtos = []string{ALPN}
	case !contains(c.NextProtos, ALPN):
		return nil, fmt.Errorf("the tls.Config's NextProtos %q lack erpc's %q: add it, or leave NextProtos empty", c.NextProtos, ALPN)
	}
	if c.MaxVersion != 0 && c.MaxVersion < tls.VersionTLS13 {
		return nil, errors.New("the tls.Config's MaxVersion is below TLS 1.3: erpc speaks TLS 1.3 only")
	}
	c.MinVersion = tls.VersionTLS13
	return c, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Assoc is one TLS association: one side of one erpc session's
// handshake, and then its Application keys. It is not safe for
// concurrent use: the endpoint's event loop owns it.
type Assoc struct {
	LocalID   uint64 // ours: the peer's packets to us carry it as their destID
	PeerID    uint64 // the peer's, once learned from its first frame (0 before)
	InitialID uint64 // the client's chosen ID: the Initial keys, and the client's Initial destID

	client bool
	cfg    *Config
	conn   *tls.QUICConn
	sealer [3]*seal.Sealer
	opener [3]*seal.Opener
	rx     [2]stream
	txOff  [2]uint32

	flight    []pending // the last flight, to send again (plaintext frames)
	building  []pending // the flight being written by the current step
	out       [][]byte  // sealed datagrams to send now
	closeMsg  *pending  // the close frame, once the handshake failed
	err       error
	done      bool // crypto/tls says the handshake is complete
	confirmed bool // client: the server has our Finished (an Application packet from it opened)
	// initialGone: a Handshake packet from the peer opened, so the peer
	// has the Handshake keys and Initial packets (whose keys any observer
	// derives from the client's first Initial) are no longer accepted.
	initialGone bool
	ticketSent  bool
	peerClose   bool
	scratch     []byte
	appOut      [][]byte // Application-level crypto frames to seal and send (a ticket)
	appOff      uint32
	appRx       stream
}

// AppCryptoMarker starts the plaintext of an Application-level packet
// that carries crypto data after the handshake (a session ticket)
// instead of an erpc packet (whose first byte is wire.Magic, 0xE7).
const AppCryptoMarker = 0xC1

// SendTicket has a server's crypto/tls write a session ticket (no 0-RTT),
// once, if its config allows tickets; TakeAppCrypto then has the packets.
// It calls the config's WrapSession (the user's code, which may block).
func (a *Assoc) SendTicket() {
	if a.client || !a.Established() || a.cfg.TLS.SessionTicketsDisabled || a.ticketSent {
		return
	}
	a.ticketSent = true
	if err := a.conn.SendSessionTicket(tls.QUICSessionTicketOptions{}); err != nil {
		return // no ticket: the next handshake is a full one
	}
	for ev := a.conn.NextEvent(); ev.Kind != tls.QUICNoEvent; ev = a.conn.NextEvent() {
		if ev.Kind == tls.QUICWriteData {
			_ = a.write(ev.Level, ev.Data)
		}
	}
}

// TakeAppCrypto returns the Application-level crypto packets' plaintexts
// (each starts with AppCryptoMarker), to seal with SealApp, and forgets
// them.
func (a *Assoc) TakeAppCrypto() [][]byte {
	o := a.appOut
	a.appOut = nil
	return o
}

// ReceiveAppCrypto takes the plaintext of an opened Application packet
// that starts with AppCryptoMarker: a client's session ticket, which
// crypto/tls stores in the config's ClientSessionCache (the user's code,
// which may block). A malformed one is dropped. It touches only the
// ticket's state, so it may run beside SealApp and OpenApp, one call at
// a time.
func (a *Assoc) ReceiveAppCrypto(plain []byte) error {
	var f frame
	if len(plain) < 1 || f.parse(plain[1:]) != nil || f.kind != frameCrypto || !a.client {
		return errFrame
	}
	ready, _ := a.appRx.add(f.offset, f.data)
	if len(ready) == 0 {
		return nil
	}
	if err := a.conn.HandleData(tls.QUICEncryptionLevelApplication, ready); err != nil {
		return err // a bad ticket costs the next resumption only
	}
	for ev := a.conn.NextEvent(); ev.Kind != tls.QUICNoEvent; ev = a.conn.NextEvent() {
	}
	return nil
}

// pending is a handshake frame not yet sealed: sealed afresh, with a new
// packet number, each time it is sent.
type pending struct {
	level seal.Level
	plain []byte
}

// NewClient starts a client association: its first flight (the
// ClientHello) is ready in TakeOutput.
func NewClient(cfg *Config, localID, initialID uint64) (*Assoc, error) {
	a := PrepareClient(cfg, localID, initialID)
	return a, a.Start()
}

// PrepareClient is a client association not started yet: Start writes
// its ClientHello, which calls the config's ClientSessionCache (the
// user's code, which may block), so an event loop runs it elsewhere.
func PrepareClient(cfg *Config, localID, initialID uint64) *Assoc {
	a := &Assoc{LocalID: localID, InitialID: initialID, client: true, cfg: cfg}
	a.conn = tls.QUICClient(&tls.QUICConfig{TLSConfig: cfg.TLS})
	return a
}

// Start starts a PrepareClient association; its first flight is then in
// TakeOutput, or its failure in Err.
func (a *Assoc) Start() error { return a.start() }

// NewServer starts a server association for a client whose first
// Initial packet named initialID.
func NewServer(cfg *Config, localID, initialID uint64) (*Assoc, error) {
	a := &Assoc{LocalID: localID, InitialID: initialID, cfg: cfg}
	a.conn = tls.QUICServer(&tls.QUICConfig{TLSConfig: cfg.TLS})
	return a, a.start()
}

func (a *Assoc) start() error {
	c, s := seal.InitialSecrets(a.InitialID)
	mine, theirs := s, c
	if a.client {
		mine, theirs = c, s
	}
	var err error
	if a.sealer[seal.LevelInitial], err = seal.NewSealer(seal.InitialSuite, mine, seal.LevelInitial); err != nil {
		return err
	}
	if a.opener[seal.LevelInitial], err = seal.NewOpener(seal.InitialSuite, theirs, seal.LevelInitial); err != nil {
		return err
	}
	if a.client {
		a.conn.SetTransportParameters(a.cfg.Params)
	}
	a.step(a.conn.Start(context.Background()))
	return a.err
}

// Err is why the handshake failed, nil while it has not.
func (a *Assoc) Err() error { return a.err }

// Established reports whether Application packets may be sealed and
// opened: the handshake is complete on this side.
func (a *Assoc) Established() bool {
	return a.err == nil && a.done && a.sealer[seal.LevelApplication] != nil && a.opener[seal.LevelApplication] != nil
}

// Confirmed reports, on a client, that the server has completed the
// handshake too; a server's association is confirmed once established.
func (a *Assoc) Confirmed() bool { return a.Established() && (a.confirmed || !a.client) }

// ConnectionState is the TLS state: the peer's certificates, the
// negotiated ALPN and suite.
func (a *Assoc) ConnectionState() tls.ConnectionState { return a.conn.ConnectionState() }

// TakeOutput returns the datagrams to send now (a flight, a close) and
// forgets them.
func (a *Assoc) TakeOutput() [][]byte {
	o := a.out
	a.out = nil
	return o
}

// Resend queues the current flight again (a client's retransmission),
// or the close if the handshake failed.
func (a *Assoc) Resend() {
	if a.closeMsg != nil {
		a.out = append(a.out, a.sealPending(a.closeMsg))
		return
	}
	for i := range a.flight {
		a.out = append(a.out, a.sealPending(&a.flight[i]))
	}
}

// Close ends the association; crypto/tls's goroutine exits.
func (a *Assoc) Close() { _ = a.conn.Close() }

// ErrNotHandshake is Receive's answer to an Application packet: open
// it with OpenApp.
var ErrNotHandshake = errors.New("secure: an Application-level packet")

// Receive handles a handshake packet (Initial or Handshake level): it
// opens it, takes its frame, and feeds crypto/tls. What to send in answer
// is in TakeOutput. An error means the packet was dropped (it did not
// open, or was malformed); the association's own failure is Err.
func (a *Assoc) Receive(h *seal.Header, pkt []byte) error {
	if h.Level == seal.LevelApplication {
		return ErrNotHandshake
	}
	if a.levelGone(h.Level) {
		return seal.ErrOldKey
	}
	o := a.opener[h.Level]
	if o == nil {
		return seal.ErrWrongLevel
	}
	plain, err := o.Open(a.scratch[:0], pkt)
	if err != nil {
		return err
	}
	a.scratch = plain[:0]
	if h.Level == seal.LevelHandshake {
		a.initialGone = true
	}
	var f frame
	if err := f.parse(plain); err != nil {
		return err
	}
	if a.PeerID == 0 {
		a.PeerID = f.srcID
	}
	switch {
	case f.kind == frameClose:
		if a.err == nil {
			a.err = fmt.Errorf("%s", f.data) // the peer's reason (PeerClosed says whose)
			a.peerClose = true
		}
		return nil
	case a.err != nil: // failed: the peer has not heard, tell it again
		a.Resend()
		return nil
	}
	ready, dup := a.rx[h.Level].add(f.offset, f.data)
	if dup {
		if !a.client && h.Level == seal.LevelInitial {
			a.Resend() // the client did not get our flight
		}
		return nil
	}
	if len(ready) > 0 {
		level := tls.QUICEncryptionLevelInitial
		if h.Level == seal.LevelHandshake {
			level = tls.QUICEncryptionLevelHandshake
		}
		a.step(a.conn.HandleData(level, ready))
	}
	return nil
}

// PeerValidated reports whether a Handshake packet from the peer opened:
// it has the Handshake keys, so it received our flight at the address
// it sends from (a server sends an address not yet validated at most a
// few times what it received from it, as QUIC does).
func (a *Assoc) PeerValidated() bool { return a.initialGone }

// levelGone reports whether packets at level are no longer accepted, as
// QUIC discards a level's keys: Initial once a Handshake packet from the
// peer opened (anyone who saw the client's first Initial can forge
// Initial packets, a close among them), and Handshake once the
// handshake is confirmed (nothing is left to say there). Such packets
// are dropped unopened.
func (a *Assoc) levelGone(level seal.Level) bool {
	switch level {
	case seal.LevelInitial:
		return a.initialGone || a.Confirmed()
	case seal.LevelHandshake:
		return a.Confirmed()
	}
	return false
}

// step drains crypto/tls's events after Start or HandleData returned err.
func (a *Assoc) step(err error) {
	a.building = a.building[:0]
	for err == nil {
		ev := a.conn.NextEvent()
		if ev.Kind == tls.QUICNoEvent {
			break
		}
		err = a.event(ev)
	}
	if err != nil {
		a.fail(err)
		return
	}
	if len(a.building) > 0 {
		a.flight = append(a.flight[:0], a.building...)
		a.Resend()
	}
}

func (a *Assoc) event(ev tls.QUICEvent) error {
	switch ev.Kind {
	case tls.QUICWriteData:
		return a.write(ev.Level, ev.Data)
	case tls.QUICSetReadSecret, tls.QUICSetWriteSecret:
		lvl, err := seal.LevelOf(ev.Level)
		if err != nil {
			return err
		}
		if ev.Kind == tls.QUICSetReadSecret {
			a.opener[lvl], err = seal.NewOpener(ev.Suite, ev.Data, lvl)
		} else {
			a.sealer[lvl], err = seal.NewSealer(ev.Suite, ev.Data, lvl)
		}
		return err
	case tls.QUICTransportParameters:
		if !bytes.Equal(ev.Data, a.cfg.Params) {
			return fmt.Errorf("the peer's erpc session parameters %x differ from ours %x (another wire version)", ev.Data, a.cfg.Params)
		}
	case tls.QUICTransportParametersRequired:
		a.conn.SetTransportParameters(a.cfg.Params)
	case tls.QUICHandshakeDone:
		a.done = true
	}
	return nil
}

// write splits crypto data written at level into frames of the current
// flight.
func (a *Assoc) write(level tls.QUICEncryptionLevel, data []byte) error {
	lvl, err := seal.LevelOf(level)
	if err != nil {
		return err
	}
	if lvl == seal.LevelApplication { // post-handshake: a session ticket
		f := frame{kind: frameCrypto, srcID: a.LocalID, offset: a.appOff, data: data}
		a.appOut = append(a.appOut, appendFrame([]byte{AppCryptoMarker}, &f, 0))
		a.appOff += uint32(len(data))
		return nil
	}
	room := a.cfg.MaxDatagram - seal.Overhead - frameHeaderLen
	if room <= 0 {
		return errors.New("secure: datagrams too small for a handshake frame")
	}
	for len(data) > 0 {
		n := min(room, len(data))
		f := frame{kind: frameCrypto, srcID: a.LocalID, offset: a.txOff[lvl], data: data[:n]}
		pad := 0
		if a.client && lvl == seal.LevelInitial {
			pad = min(minInitial, a.cfg.MaxDatagram) - seal.Overhead
		}
		a.building = append(a.building, pending{level: lvl, plain: appendFrame(nil, &f, pad)})
		a.txOff[lvl] += uint32(n)
		data = data[n:]
	}
	return nil
}

// fail records the handshake's failure and queues a close frame for the
// peer, at the highest level both are sure to have.
func (a *Assoc) fail(err error) {
	if a.err != nil {
		return
	}
	a.err = err
	reason := err.Error()
	var alert tls.AlertError
	if errors.As(err, &alert) {
		reason = alert.Error()
	}
	lvl := seal.LevelInitial
	if a.sealer[seal.LevelHandshake] != nil && a.PeerID != 0 {
		lvl = seal.LevelHandshake
	}
	f := frame{kind: frameClose, srcID: a.LocalID, data: []byte(reason)}
	a.closeMsg = &pending{level: lvl, plain: appendFrame(nil, &f, 0)}
	a.Resend()
}

// Fail ends the handshake from outside (a timeout, a closed endpoint)
// and queues the close for the peer.
func (a *Assoc) Fail(err error) { a.fail(err) }

// PeerClosed reports whether the failure is the peer's close frame.
func (a *Assoc) PeerClosed() bool { return a.peerClose }

func (a *Assoc) sealPending(p *pending) []byte {
	dest := a.PeerID
	if a.client && p.level == seal.LevelInitial {
		dest = a.InitialID
	}
	return a.sealer[p.level].Seal(make([]byte, 0, len(p.plain)+seal.Overhead), dest, p.plain)
}

// SealApp appends to dst inner (a whole erpc packet) sealed at the
// Application level, addressed to the peer. inner may sit exactly at
// dst[len(dst)+seal.HeaderLen:] (sealed in place). It updates the key
// when the sealer says one is due.
func (a *Assoc) SealApp(dst, inner []byte) []byte {
	s := a.sealer[seal.LevelApplication]
	if s.UpdateDue() {
		s.UpdateKey()
	}
	return s.Seal(dst, a.PeerID, inner)
}

// UpdateKey starts a key update of our sending direction now (a test
// hook: SealApp does it when due).
func (a *Assoc) UpdateKey() { a.sealer[seal.LevelApplication].UpdateKey() }

// OpenApp opens an Application-level packet into dst.
func (a *Assoc) OpenApp(dst, pkt []byte) ([]byte, error) {
	o := a.opener[seal.LevelApplication]
	if o == nil || a.err != nil {
		return dst, seal.ErrWrongLevel
	}
	out, err := o.Open(dst, pkt)
	if err == nil {
		a.confirmed = true
	}
	return out, err
}

// AppDrops is the Application opener's drop counters.
func (a *Assoc) AppDrops() seal.Drops {
	if o := a.opener[seal.LevelApplication]; o != nil {
		return o.Drops()
	}
	return seal.Drops{}
}

// KeyGenerations is how many key updates each direction has made.
func (a *Assoc) KeyGenerations() (send, recv uint64) {
	if s := a.sealer[seal.LevelApplication]; s != nil {
		send = s.Generation()
	}
	if o := a.opener[seal.LevelApplication]; o != nil {
		recv = o.Generation()
	}
	return
}
