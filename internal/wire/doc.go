// Package wire defines erpc-go's packet format: a fixed 40-byte header that
// starts every datagram, and the small payload of the session-management
// packets. It uses the standard library only, never allocates, and treats
// every input as hostile: a parser returns an error for anything malformed
// and never panics (each parser has a fuzz target).
//
// # Header layout
//
// All multi-byte fields are little-endian; every field sits at its natural
// alignment.
//
//	off size field
//	 0   1   magic      0xE7: drops stray datagrams early
//	 1   1   version    2
//	 2   1   type       packet type, see [Type]
//	 3   1   flags      see the Flag constants
//	 4   1   code       status of a response, reason of a NACK/reset/connect-ack
//	 5   1   path       path id, for multipath spraying (SRD); echoed by replies
//	 6   2   hold       server to client: µs the server held the triggering
//	                    packet before this reply; client to server, with
//	                    FlagDeadline: the call's remaining time (see
//	                    [EncodeTimeout])
//	 8   4   session    destination session number
//	12   4   token      the destination session's random token (see below)
//	16   4   reqType    request type (method id)
//	20   4   msgSize    size of the whole message this packet belongs to
//	24   4   pktIndex   index of this packet within its message (or the
//	                    response packet an RFR asks for)
//	28   4   txSeq      client transmit sequence; servers echo it in the reply
//	32   8   reqNum     request number; slot = reqNum % window
//
// The header is bigger than eRPC's 16 bytes because it carries what eRPC
// lacked: a version, a token against stale and spoofed packets, a path id,
// an echoed transmit sequence (exact RTT samples and loss detection without
// retransmission ambiguity) and the server hold time (so a slow handler does
// not inflate the client's RTO). On a 1472-byte UDP payload it costs 2.7 %.
//
// # Session identity
//
// Each end of a session picks its own random nonzero 32-bit token, and
// every packet carries the token of the session it is addressed to: client
// packets carry the server's token, server packets the client's. A packet
// whose (session, token) pair does not name a live session is dropped, so
// no packet from an earlier life of a session number (a late or duplicated
// datagram, a previous incarnation of either process) can reach a newer one.
//
// The handshake: the client sends [TypeConnect] with its own token in the
// header and its session number in the [Connect] payload. The server
// deduplicates connects by (client address, client session number, client
// token): a copy of a connect it already accepted gets the same answer, and
// any other connect creates a new server session with a fresh server token,
// returned in the [TypeConnectAck] payload ([Connect.Token]). A connect never
// ends or changes an existing session; a forged or late one costs at most an
// unconfirmed session, which the server reaps a second or so after the
// connect or its latest copy (HalfOpenTimeout) and whose number it bounds
// (below). The first packet carrying the new server token confirms the
// session; only then does the server end an older session of the same
// client address and session number (the client restarted, or reused the
// number after closing it), and only if that session's client was last
// heard at that address: a client whose NAT moved it to another port keeps
// its session when the NAT hands the old port to another client. (A NAT
// that drops its mappings at once can hand the port over before the first
// client speaks again; a live session of the same number there then ends,
// and its calls fail, unrun or not, but never run twice.) A client with
// nothing to send confirms at once with a ping.
//
// A flood of connects from forged sources must not fill the server: once
// its unconfirmed sessions reach their bound, the server answers a connect
// statelessly with a connect-ack coded [CodeRetry] whose payload carries
// its limits and a [Cookie] (the payload is then ConnectLen+CookieLen
// long): a MAC, under a secret key the server rotates, over the client's
// address and port, session number and token and a coarse time bucket.
// The client sends its connect again, the same but for the cookie echoed
// at its end (a retry is an answer: it extends the client's connect
// timeout, a bounded number of times); a server accepts a connect with a
// valid cookie from the current or the previous bucket even under
// pressure, since it proves the client receives at its source address,
// which a forger never sees. A cookie makes one session: a copy of its
// connect that comes after that session ended (a network duplicate, a
// replay from the path) counts as having no cookie. A session a cookie
// made is not counted against the bound, but is reaped unconfirmed like
// the others, and its ack carries [FlagConfirm] too.
//
// Amplification: past the bound a forged connect costs the server no
// state, only a 72-byte retry answering the 64-byte packet (9/8). Below
// it, a forged connect draws a 64-byte ack, and a 40-byte closing reset
// when its session is reaped a second later: 104 bytes for 64 (13/8),
// for at most the bound's worth of connects per second, so a flood gets
// 13/8 on its first MaxHalfOpen connects per HalfOpenTimeout and 9/8 on
// the rest. A connect without a cookie is 24 bytes of payload as before,
// so peers that never meet a flood never see one.
//
// A server that gets a packet for a session it does not have answers with
// [TypeReset], whose MsgSize field is a lower bound, in µs (saturating), on
// how long that server has had no session with that number and token, and
// which echoes the packet's TxSeq and ReqNum. A client believes a reset
// only if it echoes a packet of the session still awaiting its answer (a
// client's TxSeq starts at a random value per session). A client that
// sent every packet of a request later than the bound (by its own clock,
// with a margin for clock-rate error) knows the request never reached a
// live session and never ran, and may send it again on a new session. A
// reset never makes that claim for a session the server has: one that
// answers a packet naming a live session's number and token says 0.
//
// A client's address may change under a session (NAT rebinding, a
// multihomed host, a moved container). A server session takes its client's
// packets from any port of the IP that proved it has the session, and
// answers each where it came from. A packet with a live session's number
// and token from another IP is neither executed nor answered, nor reset:
// the server sends that address a [TypePathChallenge] (a bare header:
// Session is the client's number, Token zero so as not to tell whoever
// holds the address the client's token, ReqNum a random nonce, TxSeq and
// Path echoing the packet's), at most one per millisecond per session; the
// nonces of the last two IPs challenged stay valid for a second, and an IP
// the millisecond held back is challenged next, so one address that keeps
// sending cannot void the client's challenge. The client answers from the
// address challenged with a [TypePathResponse] (Session and Token the
// server's, ReqNum the nonce, MsgSize the client's own token), and resends
// the packet the challenge echoes; only that answer, from the IP
// challenged, moves the session to the new address. A client whose
// address stays put for several round trips at a time keeps its calls
// going; one that moves faster may see calls fail (a challenge answered
// from an address already gone), never run twice. So a packet whose
// source is forged to another IP than the client's, even one carrying the
// server's token, can neither run, nor redirect a session's answers, nor
// end it; one from the client's own IP with that token can (see Threat
// model).
//
// A server that ends a session on its own (it is closing, or the session
// was idle beyond its timeout) tells the client with a reset coded
// [CodeServerClosing], whose ReqNum is the lowest request number the server
// never saw on that session: requests numbered that or higher never ran.
// Its MsgSize is the client's token, which the client checks: the server's
// token travels in every client packet, the client's only in the server's.
// It is best effort; an idle client that gets it opens a new session for
// its next call instead of sending the call where no session will know it.
//
// A server that starts to shut down tells each session's client first,
// without ending the session: a [TypePong] coded [CodeDraining] and
// flagged [FlagDraining], sent unasked and best effort, and from then on
// the same flag on every packet it sends. Its client then sends new calls
// to other servers; the requests it still sends are refused as never run.
// The notice needs the client's token, as the closing notice does.
//
// A request may carry its remaining time ([FlagDeadline] with the hold
// field): the server's handler sees the deadline. A request with
// [FlagMetadata] starts with a metadata block of key/value pairs
// ([AppendMetadata]); without the flag nothing of metadata is on the wire.
// A response with [FlagMetadata] (on each of its packets) starts with two
// such blocks, the handler's headers and then its trailers, ahead of the
// message or, for an error answer, of the status payload; either block may
// be empty, and both together are at most [MaxMetadata] bytes
// ([AppendResponseMetadata], [ParseResponseMetadata]). The flag is
// constant across a message's packets, as the status code is: a client
// drops a response packet that disagrees with the first. The engine only
// carries the flag; the blocks are part of the message, so they travel,
// are retransmitted and are bounded by the session's maximum message size
// as the message is. A response without metadata costs nothing extra.
//
// # Protected packets (TLS)
//
// An endpoint with TLS (erpc.WithTLS) never sends these packets in the
// clear: each travels inside a protected packet (first byte 0xE9, not
// this format's 0xE7) whose layout, keys, nonces, replay window and key
// update internal/seal's doc describes; the handshake's own packets are
// internal/secure's. The engine sees only packets that opened, each
// tagged with its TLS association, and a session answers only its own
// association's packets. Two plaintext connect-acks are the exception,
// both refusals that can only make a dial fail: [CodeTLSRequired], a TLS
// endpoint's answer to a plaintext connect, and [CodeTLSUnsupported], a
// plaintext endpoint's answer to a protected Initial packet, whose ReqNum
// echoes that packet's destination ID.
//
// # Threat model
//
// This section is about plaintext sessions (with TLS, see erpc.WithTLS:
// what is protected, and what is not). Such sessions are neither
// encrypted nor authenticated. Tokens and
// nonces travel in clear, so an attacker that reads a session's packets
// can forge any of them: run requests, end the session, move it to an
// address of its own, or forge a reset that makes the client send again a
// request that ran. The promises hold against the network's own
// behaviour (loss, duplication, reordering, delay, late packets from
// earlier sessions or process incarnations, NAT rebinding and port reuse)
// and against off-path attackers, who cannot read the traffic and would
// have to guess a random 32-bit token to name a session at all. Against
// an attacker that has read some packets, a few cheap checks raise the
// bar, and no more:
//
//   - A packet with the server's token from another IP is challenged,
//     never executed or answered; the session moves only when the answer
//     comes from that IP with the nonce and the client's token, which
//     only server packets show. A flood from one address with the token
//     cannot keep the challenge from reaching the client's new address;
//     floods from many addresses can.
//   - A reset is believed only if it echoes a packet still awaiting its
//     answer (a client's sequence numbers start at random), a closing
//     notice only if it carries the client's token. One who saw an earlier
//     client datagram, but neither the current ones nor a server packet,
//     cannot make a handler run twice with a single forgery; sequence
//     numbers count up from the one it saw, so a spray of guesses may.
//   - A session takes its client's packets from any port of the client's
//     IP (a multipath client sends from several, a NAT may move it to
//     another). Whoever has the server's token and can send from that IP
//     (a neighbour behind the same NAT, a spoofer the network lets use
//     the IP) is taken for the client: its requests run, and its
//     disconnect ends the session.
//
// # Packet exchange
//
// The protocol is client-driven (eRPC): a server sends a packet only in reply
// to a client packet, but for the closing notice ([TypeReset] with
// [CodeServerClosing]) that ends a session it closes or reaps, and the
// draining notice ([TypePong] with [CodeDraining]) at the start of a
// shutdown. Client to
// server: [TypeReq], [TypeRFR], [TypeCancel], [TypeConnect],
// [TypeDisconnect], [TypePing], [TypePathResponse]. Server to
// client: [TypeCR], [TypeResp], [TypeNack], [TypeCancelAck],
// [TypeConnectAck], [TypePong], [TypeReset], [TypePathChallenge]. The engine
// in internal/proto gives them their meaning.
package wire
