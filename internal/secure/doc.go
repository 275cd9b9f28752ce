// Package secure runs one TLS 1.3 association of an erpc session: the
// handshake, through crypto/tls's QUIC interface (tls.QUICClient,
// tls.QUICServer), carried in protected packets of the Initial and
// Handshake levels (internal/seal), and then the Application level's
// sealer and opener that protect every erpc packet of the session. It is
// sans-I/O: bytes in, datagrams out, no clock, no goroutine of its own
// (crypto/tls runs the handshake on one of its own while HandleData
// waits), no socket. The endpoint (the root package's tls_layer.go) owns
// the table of associations, routes packets by destination ID and drives
// retransmission.
//
// # Handshake packets
//
// A handshake packet's plaintext, sealed at the Initial or Handshake
// level, is one frame:
//
//	off size field
//	 0   1   kind     1 crypto data, 2 close (the handshake failed)
//	 1   8   srcID    the sender's ID: packets to it carry it as destID
//	 9   4   offset   of data in the level's crypto stream
//	13   2   length   of data
//	15   n   data     crypto data; for close, the reason (a TLS alert's text)
//	15+n     padding  zeros (a client's Initial is padded to 1200 bytes)
//
// Each level's stream is reassembled in order and handed to crypto/tls;
// a frame is at most what fits the transport's datagram, so a long
// certificate chain spans several packets. Retransmission is the
// client's, as for erpc's connects: it sends its current flight again on
// its connect timer (the endpoint calls Flight), and a server that sees a
// copy of the client's flight (crypto data it has already had) sends its
// own again. A client's Finished goes out again with each packet until a
// packet of the server's Application level proves the server has it.
//
// # What a forger can do
//
// The Initial keys derive from the client's chosen ID, which travels in
// the clear: anyone who sees the client's first Initial can forge
// Initial packets, and anyone at all can make up new ones. So a level is
// given up as QUIC gives up its keys: Initial packets are dropped once a
// Handshake packet from the peer opened, Handshake ones once the
// handshake is confirmed (a forged close then ends nothing). A server
// makes an association only for a first Initial that is padded to 1200
// bytes, opens and starts a ClientHello (CheckFirstInitial), and reports
// the peer's address validated (PeerValidated) once a Handshake packet
// from it opened: until then the endpoint sends it at most three times
// what it received. Guard wraps a tls.Config's callbacks, which
// crypto/tls calls on its own goroutine, so that a panic fails the
// handshake instead of the process.
//
// # Identity and parameters
//
// The ALPN is erpc's own ("erpc/1"), required on both sides. erpc's
// session parameters (its wire version) travel as the TLS transport
// parameters: peers of different versions fail the handshake, saying so.
// 0-RTT is refused. Session resumption is crypto/tls's: once its
// handshake is complete a server sends one session ticket (best effort,
// not retransmitted), in an Application-level packet whose plaintext
// starts with AppCryptoMarker (0xC1) instead of an erpc packet's 0xE7,
// followed by a crypto frame as above; a client whose tls.Config has a
// ClientSessionCache stores it, and its next handshake to that server
// resumes (no certificate sent or verified again).
package secure
