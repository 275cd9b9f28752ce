// Package cc is the congestion control and path choice of a client
// session: a delay-target window (Swift-style AIMD) with a pacer, and, for
// sessions over several paths (SRD), the choice of each packet's path.
//
// # Sans-I/O
//
// A [Controller] reads no clock, starts no goroutine, touches no socket and
// does not allocate after [Controller.Init] (which allocates only for more
// than 2 paths). Every method takes now, in nanoseconds on the caller's
// monotonic clock, and the samples; the engine embeds one Controller per
// client session and calls it:
//
//	OnSend(now, bytes, path)    when a packet leaves (path from PickPath or RetransmitPath)
//	OnAck(now, rtt, bytes, path, under)  once per acknowledged packet, rtt net of the server's hold time,
//	                            bytes the larger packet of the exchange (sent or reply)
//	OnTimeout(now, path)        when a packet sent on path is given up for lost
//	Bypass()                    true: uncongested, skip Allowed and NextSend
//	Allowed(), NextSend(now)    packets the window allows in flight; when the next may leave
//	PickPath(now, rnd)          the path of a new packet
//	RetransmitPath(now, lost, rnd)  the path of a retransmission
//
// # The window
//
// The window cwnd is in packets, between MinWindow (0.1) and MaxWindow (the
// session's credits, 32). A session starts in slow start at InitialWindow
// (2) and doubles per RTT until the delay first exceeds the target (a cut)
// or the window is full. Then, per acknowledgement:
//
//   - below target: cwnd += AI/cwnd (AI = 1 packet per RTT), or AI when
//     cwnd < 1 (Swift: such a session hears once per RTT/cwnd, so this is
//     AI*cwnd per RTT, which keeps the sum over many small windows in
//     proportion to the link);
//   - above target, at most once per smoothed RTT: cwnd *= max(1 -
//     Beta*(delay-base)/delay, 1 - MaxMDF), Beta = 0.8, MaxMDF = 0.5.
//
// Below one packet the session is paced at one packet per RTT/cwnd; above
// it, while congested, at cwnd/srtt (srtt/cwnd between packets, in
// proportion to their size against a full PacketSize), so that a cut
// window does not leave in a burst, and Allowed is cwnd rounded up. Slow
// start paces at twice that so as not to hold back its own growth (as
// Linux does).
//
// The target is base + q + fs*q, with q = max(QueueFloor, QueueFrac*base) =
// max(10 µs, base/4) the tolerated queueing, and fs Swift's flow-scaling
// term: FlowScale (5) times (1/sqrt(cwnd) - 1/sqrt(FlowScaleMax)) /
// (1/sqrt(FlowScaleMin) - 1/sqrt(FlowScaleMax)), clipped to [0, FlowScale],
// with FlowScaleMin = 0.1 and FlowScaleMax = MaxWindow: a full window
// tolerates q, a window of 0.1 packet 6q. A smaller window tolerating a
// deeper queue is what brings many small windows to equal shares: when the
// queue sits between two sessions' targets, the larger one cuts while the
// smaller one grows. MinWindow equals FlowScaleMin because below it flow
// scaling is flat and nothing would pull a window back up.
//
// # The link floor
//
// q is never less than LinkPackets (2) full packets' time at the path's
// bottleneck: target = base + Q + fs*Q, Q = max(q, 2*pkt). On a slow link
// one packet takes longer to cross than q (1472 B at 50 Mbit/s: 235 µs),
// so a queue of one or two of the session's own packets, which is how a
// window keeps such a link busy, would read as congestion. pkt is a
// packet-pair estimate, per path: two packets that meet in the bottleneck
// queue come out spaced by the second one's time there. One paced packet
// in pairEvery (16) is followed at once by the next, even one over the
// window (a session held below two packets would otherwise never learn
// the floor, and starved beside those that had: Jain 0.54 in the model's
// 4 sessions on 250 Mbit/s). The gap between their acknowledgements is a
// sample when the pair left at least 8 times closer together than it
// came back (a pair the engine could not send at once, or a session's own
// pacing, measures the sender; in the simulated incast such samples,
// inflated by the other senders' packets between the two, broke fairness:
// Jain 0.31-0.61 with 50 senders), both packets queued (the second for at
// least q, the first for q/2: a token-bucket shaper such as tc's TBF lets
// packets that find tokens through at line rate), the packet is at least
// half a full one, the gap at least 1 µs (acknowledgements processed in a
// batch), and no stall is suspected. LinkFloorMax (5 ms) caps the floor.
// On a fast link the floor is below q and changes nothing. Flow scaling
// is in units of Q, so that sessions sharing a slow link still tolerate
// different queues (4 sessions on 10-1000 Mbit/s, FIFO or TBF: Jain >=
// 0.95 in the model, TestModelLinkShare).
//
// pkt is the median of the path's last 32 samples, scaled to a full
// packet, capped by a delivery-rate bound (linkrate.go). The lowest
// sample over the base RTT's window, which it was before, is right on a
// FIFO link (other senders' packets between the two only widen a gap),
// but on the test bed (tc TBF on a veth, a loaded host) the shaper's
// timer runs late and lets the queue out in clumps, and the client reads
// acknowledgements in batches: the minimum came out at 16-97 µs at 50
// Mbit/s, where a frame takes 242 µs and the samples' median was 241 µs.
// The model's shaper with a late timer (TestModelLinkLateTimer: 30 or
// 100 µs late on average, 50 Mbit/s to 1 Gbit/s) took the minimum to
// 0.00-0.08 of the packet time. The median ignores the squeezed gaps and
// the widened ones while each kind is under half of the samples. Where
// the widened ones are more (a timer late by several packet times: gaps
// that took in the lateness), the bound holds it: the session's own
// bytes acknowledged per unit of time, over intervals of at least 64
// acknowledgements and 32 ms opened on a packet that queued (a token
// bucket then has no tokens left, so the interval cannot count its
// burst), highest over the base RTT's window, as BBR's windowed max. That
// rate is the session's share, an upper bound of the packet time, and is
// never the estimate by itself. In the model the estimate is then within
// 0.88-1.01 of the packet time with the late timer (50 Mbit/s to
// 1 Gbit/s), and exact on two unequal TBF paths.
//
// # The share mark
//
// Below one packet, delay alone does not bring sessions to equal shares:
// a session hears once per RTT/cwnd, and both its increase (AI per
// acknowledgement, AI*cwnd per RTT) and its cut are in proportion to its
// window, which keeps the ratios between windows. A 16- or 50-way incast
// through 500 Mbit/s (windows of a few hundredths of a packet) stayed at
// Jain 0.70-0.76 in 10 ms windows. The server is where the senders meet:
// it counts each session's request bytes over the last 2-4 ms and marks
// its replies (wire.FlagUnderShare) to a session below 0.9 of the mean
// rate, weighted by rate (package proto, share.go). OnAck takes the mark:
// a congested acknowledgement that carries it grows a window below one
// packet instead of cutting it, while the unmarked sessions cut. In the
// simulated incast Jain went to 0.97-0.98 (16 senders) and 0.95 (50).
// The exemption stops at one packet, where the delay converges by itself:
// a session whose bottleneck is not at that server (its own uplink) is
// under its share there, and ignores its queue for at most two packets in
// flight. A lone session is never marked, and a server does not meter the
// same-host peers whose clients run no congestion control.
//
// # Why these constants, and where they depart from Swift
//
// Start: network.md's htsim defaults (ai = 1 packet, beta = 0.8, max_mdf =
// 0.5 once per RTT, flow scaling over 0.1..max window, range 5), scaled to
// our ~10 µs base RTT. Every change was driven by the discrete-event model
// in model_test.go (see "What the tests show" below):
//
//   - Swift's base delay is configured from the topology; ours is measured
//     (the lowest sample of the last BaseWindow, 10 s, per path). A measured
//     base has a known flaw: a session that starts while a queue stands
//     takes the queue for propagation (the latecomer problem of Vegas and
//     LEDBAT), aims higher than everyone else, and takes the link. Four
//     choices keep that error small and let it heal:
//   - the engine seeds each session's base with its handshake's RTT
//     (ObserveBase), taken before the session queued anything: in an
//     incast where every session starts at once, the first data packets
//     meet each other at the bottleneck, and without the seed the n-th
//     session's base held n-1 sessions' first packets (the engine's
//     50-way incast: Jain 0.30 without, 0.95 with). The seed lasts SeedFor
//     (50 ms): on a slow link a full packet takes far longer to cross than
//     the handshake's tiny ones, which is distance, not queue, and must
//     come into the base (a single 200 Mb/s path ran at 0.2 of its rate
//     while the seed stood, 0.9 after);
//   - the cut is sized by the whole queueing delay, (delay-base)/delay, not
//     by the excess over the target as in Swift: Beta of the session's
//     packets in the queue leave it, so the queue drains to about a fifth
//     at every cut and late sessions see close to the true base. (With
//     Swift's gentle cut the queue stood at the target and never drained;
//     in the model a few latecomers then held 50 sessions at Jain 0.5.)
//   - the tolerated queueing is max(10 µs, base/4), not proportional to the
//     base alone, and flow scaling is a multiple of it, not of the base: a
//     base that includes a queue does not multiply its error by 1+FlowScale.
//   - a session starts in slow start from 2 packets instead of the full
//     window (eRPC starts at the link rate): 50 sessions starting at 32
//     packets each put 1,600 packets in front of each other's first
//     samples. Slow start costs a fresh session four RTTs (~40 µs) before
//     it reaches the bypass.
//   - QueueFloor = 10 µs: the tolerated queueing must be above what the
//     host adds to the filtered delay (loopback UDP in this environment:
//     p50 12 µs against a floor of 8.5 µs, network.md), and on a
//     shared-memory transport with a 2-5 µs base a quarter of the base
//     would be below scheduler jitter.
//   - MinWindow = 0.1: a session at the floor still sends every 10 RTTs.
//     With 1/64 the sessions that fell to the floor in a 50-way incast took
//     so long to climb back (one acknowledgement per 64 RTTs) that fairness
//     over 30 ms fell to 0.91. The price: n sessions at the floor still
//     offer n/10 packets per RTT, so an incast much wider than 10x the
//     bandwidth-delay product in packets is held by the queue, not the
//     window.
//
// Costs (BenchmarkPacket, this 2-core host): the whole per-packet work
// (bypass check, window and pacer when congested, OnSend, OnAck) is
// 14-19 ns with one path, 22-35 ns with 4, 33-44 ns with 64; Bypass alone
// under a nanosecond. The link-rate estimate (a delivery count per
// acknowledgement, a sort of 32 samples per packet pair) adds 1-3 ns: in
// one run at a slower phase of the host, 23.6-28.9 ns with one path
// against 22.4-26.9 before it.
//
// # Filtering host noise
//
// The RTT a Go client measures includes its own scheduling and GC pauses.
// Timely's gradient turns that noise into cuts (eRPC issues 14 and 32:
// sessions stuck at the floor rate). Noise only ever adds delay, so the
// decision uses the lowest sample received since the acknowledged packet
// left: an isolated late sample has others beside it, while a queue that
// lasts an RTT raises them all. The filter is a monotone queue of at most 8
// entries per path, so the minimum over any recent window costs a few
// comparisons.
//
// A stall of the client itself (a GC pause) delays every acknowledgement
// that arrives while it lasts, and they are processed together at its
// end, so for the packets sent just before it there is no clean sample in
// the window. A silence (no acknowledgement at all) longer than two raw
// RTTs, or two pacing intervals below one packet, followed by a batch is
// that signature: the samples within an RTT of its end feed the base RTT
// but neither the filter nor any decision. A session idle between calls
// has the same silences, but nothing in flight to congest anything with.
// Finally a sample far above the smoothed RTT must be confirmed by the last
// kept sample before its window, in case a stall emptied the window.
//
// On a starved host (a machine at load 20, issue 33's fleet run: with
// congestion control p50 0.3-4.7 s, without 11 ms) the noise is no longer
// isolated: every wake-up is late, so every sample carries up to a
// millisecond. Below one packet of window the filter holds only the
// packet's own sample, every decision says congested, the window falls
// to MinWindow and the pacer, at srtt/MinWindow with the inflated srtt,
// carries a fraction of an open-loop load, which then queues for seconds.
// The model reproduces it (TestModelStarvedHostNoisy, run with
// ERPC_MODEL_STARVED=1: p99 0.8-0.9 s against 2 ms without congestion
// control), and shows that stalls alone, with the timeouts they cause,
// do not (TestModelStarvedHost). The cure is at the source: kernel
// receive timestamps on both ends (see below), so that neither the
// client's nor the server's scheduling delay enters the sample.
//
// The stall rule is a heuristic. What it cannot tell apart is a stall and
// a queue that appears in one step (a round trip that doubles from one RTT
// to the next): the latter is then acted on an RTT late. Taking the receive
// time from the kernel (SO_TIMESTAMPING, software RX) would remove most of
// the stall from the sample at its source.
//
// # Losses
//
// A timeout is not taken for congestion by itself: random loss (1 % in
// the model) would hold the window down. It cuts by MaxMDF, sharing the
// once-per-RTT limit, when the delay agrees there is congestion, or after
// three timeouts with no acknowledgement at all in between, when the delay
// signal is blind (every packet lost). Two timeouts in a row on one path
// make it suspect for SuspectFor (10 ms), doubling with each further
// timeout up to SuspectMax (1 s); an acknowledgement on it clears that.
//
// # Paths
//
// With K paths (1 to 64) each path keeps its base RTT, filter, smoothed
// RTT, latest filtered delay, consecutive timeouts and suspicion. PickPath
// is the power of two choices (UCCL): of two distinct random paths, the one
// with the lower estimated queueing delay, which is its latest filtered
// delay above its base, plus the packets sent on it since its latest
// acknowledgement times its smoothed interval between acknowledgements,
// less the time since that acknowledgement (the delay a path reports is an
// RTT old; without the packets sent since, the chooser poured an RTT of
// packets into a path that looked idle, and reached 0.74 of two unequal
// paths instead of 0.86; without the time since, a slow path whose one
// packet in flight counted a whole slow packet time until answered was
// held near one packet in flight, idle for a propagation delay after
// each: 50 + 250 Mbit/s reached 0.89-0.92 of the sum, 0.94-0.97 with it).
// A path never measured, or not heard of
// for 8 of its RTTs, counts as idle and is tried one packet at a time:
// busy while that packet is out, until it is given up (OnTimeout) or for
// at most 2 ms (probeWait) or 8 of the path's RTTs. Its answer may never
// be a sample (the engine drops the record of a packet whose data
// another copy delivered), and a path counted busy for ever was never
// chosen again: on the test bed the fast path of 50 + 250 Mbit/s carried
// nothing for the rest of a run (TestPickPathAfterLostProbe,
// TestPickPathAfterSilentProbe). A
// suspect path is never taken unless every path is. With one path
// PickPath returns 0 at once. RetransmitPath is the same choice among the
// paths other than the lost copy's.
//
// The window answers the median of the paths (MSwift): the session is
// congested only when more than half of the paths heard from in their last
// 8 RTTs are above target, and a cut is sized by the median of their
// queueing fractions (computed at most once per RTT), against each path's
// own target (with its own link floor). One congested path among several
// is left to the chooser, which moves away from it; it then goes quiet
// and stops voting. After a cut the next waits for the smoothed RTT of
// the slowest path that voted for it: the fast paths' samples would
// otherwise cut again and again before the slow path could show the first
// cut's effect (50 + 250 Mbit/s: 0.91-0.97 of the sum without the hold,
// 0.94-0.97 with it; TestModelMultipath's paths: 0.87-0.88, 0.89-0.90).
// Per-path windows were the alternative; with the link floor, the drain
// term and this hold, one window reached 0.94-0.96 of two unequal paths
// in the model (TestModelUnequalPaths), 0.98-0.99 with the shapers'
// timers running late (TestModelLateTimerShared, where the lowest-pair
// estimate gave 0.86-0.94), so the median vote stays: with two paths a
// cut needs both above their targets, and the slow path's delay alone
// never cuts the window.
//
// Config.RoundRobin sprays the paths in turn, blind to delay (skipping
// suspect paths, which are failures rather than a matter of performance),
// and cuts on the latest sample of any path, as one-path Swift would: the
// erpc-spray baseline.
//
// # Bypass
//
// Bypass is true exactly when the window is at MaxWindow; reaching it ends
// slow start and drops the pacer, so nothing is paced either. It is one
// load of the Controller's first byte (under a nanosecond): an uncongested
// session with nothing queued costs the engine one branch, as eRPC's Timely
// and wheel bypasses. The engine must still call OnAck for every
// acknowledgement (that is how congestion is noticed), OnSend
// and OnTimeout, and PickPath when Paths() > 1.
//
// # What the tests show
//
// model_test.go is a discrete-event model: senders, each with a
// Controller and an unlimited backlog, share FIFO links served at a fixed
// rate, with optional loss, jitter, late samples and client stalls.
// The model also has open-loop senders, retransmission timeouts and
// server stalls (model_load_test.go), token-bucket links and links of
// 10 Mbit/s to 10 Gbit/s (model_link_test.go).
// model_cc_test.go runs the scenarios: convergence of 2, 16 and 50
// sessions started 100 µs apart on an 11-packet bandwidth-delay product
// (Jain >= 0.95), host noise without the link as bottleneck (no cut at
// all), an incast burst and the recovery after it, 1 % random loss, and
// two or four unequal paths against round robin. Each asserts that its
// condition happened (a queue built, spikes and pauses were injected, the
// slow path was tried). Beyond them, the same model over longer runs:
// with a bandwidth-delay product of 3.5 packets, 16 and 50 sessions still
// reach Jain 0.95-0.98; with 1.4 packets (a 500 Mbit link, network.md's
// test bed) they reach 0.86-0.93 with queueing peaks of 5-8x the target.
// That is the incast regime of windows of a few hundredths of a packet
// that receiver-driven schemes (Homa, SIRD, UET's RCCC) address; a
// sender-side window hears about it once per RTT/cwnd. The model has no
// server; the share mark, which is the receiver's part, is measured in
// package proto's simulated incast (TestSimIncastWindows).
package cc
