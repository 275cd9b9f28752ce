package cc

// The link-rate estimate of a path: the time one full packet takes to
// cross its bottleneck, under the link floor of the delay target (see
// linkFloor). Two measurements, each wrong in a known direction, bound it:
//
//   - packet pairs (pair): two packets that met in the bottleneck queue
//     come out spaced by the second one's time there. Packets of other
//     senders between the two only ever widen a gap, so the lowest sample
//     is right on a FIFO link however many share it; but a token-bucket
//     shaper whose timer fires late (tc's TBF on a loaded host) lets the
//     queue out in clumps at the line's pace, and a client that reads
//     two acknowledgements in one wake-up squeezes their gap, so on such
//     a path every low sample is too low (97 µs of 242 at 50 Mbit/s on
//     the test bed). The path keeps the last pairRing samples: their
//     upper quantile (pairRank of pairRing) is above the squeezed ones.
//   - the delivery rate (deliver): the session's own bytes acknowledged
//     over an interval of at least deliverAcks acknowledgements and
//     deliverSpan. A clump or a late read moves at most one burst into
//     or out of an interval that long, so the highest rate over the base
//     RTT's window (BBR's windowed max) is the shaper's rate to within a
//     few percent; but it is the session's share, not the link's, when
//     others share the link, and lower when the session leaves the link
//     idle. It is always an upper bound of the packet time.
//
// The estimate is the pair quantile, never more than the delivery bound:
// alone on a bursty shaper the quantile can be above the packet time (a
// clump's gap carries the lateness) and the bound brings it back; shared,
// the bound is far above and the pairs, which other senders inflate only
// now and then, decide. Before the first delivery sample it is the lowest
// pair, as it was before the bound existed.

import "slices"

// pairRing is how many recent packet-pair samples a path keeps.
const pairRing = 16

// deliverAcks and deliverSpan are the least acknowledgements and time a
// delivery-rate interval spans: long against a shaper's clumps (the
// tens to hundreds of microseconds its timer runs late on a loaded host)
// and against a slow link's packet time.
const (
	deliverAcks = 16
	deliverSpan = 8e6 // ns
)

// linkRate is what a path knows of its bottleneck's rate.
type linkRate struct {
	pairMin winMin // lowest packet-pair sample over the window
	dlvMin  winMin // lowest delivery-rate packet time over the window (the highest rate)
	est     int64  // the estimate: see linkRate.update

	ring  [pairRing]int32 // recent pair samples, ns
	ringN uint8
	ringI uint8

	dlvStart int64 // the acknowledgement that opened the interval; 0: none
	dlvBytes int64 // bytes acknowledged since
	dlvAcks  int32
}

// addPair takes a packet-pair sample g (ns, scaled to a full packet).
func (l *linkRate) addPair(now, g, bucket int64) {
	l.pairMin.add(now, g, bucket)
	l.ring[l.ringI] = int32(min(g, 1<<31-1))
	l.ringI = (l.ringI + 1) % pairRing
	l.ringN = min(l.ringN+1, pairRing)
	l.update()
}

// deliver counts an acknowledgement at now of bytes, and closes the
// interval into a sample when it is long enough. An interval opens only
// on a packet that found a queue at the bottleneck (queued) and was read
// in time (not stalled). Queued: a token-bucket shaper (tc's TBF, 2 ms
// of its rate on the test bed) then had no tokens left, and from there
// it lets through at most its rate times the interval, whatever the
// interval holds (idle time, clumps); an interval opened on a full
// bucket would count the burst. Read in time: an acknowledgement read
// late, in a batch after a stall of the client, would open it late and
// count the rest of the batch inside it. An open interval runs through
// idle time and stalls (or what looks like one: a late shaper timer
// leaves the same silence), which can only lower its rate.
func (l *linkRate) deliver(now int64, bytes, full int, stalled, queued bool, bucket int64) {
	if l.dlvStart == 0 {
		if queued && !stalled {
			l.dlvStart, l.dlvBytes, l.dlvAcks = now, 0, 0
		}
		return
	}
	l.dlvBytes += int64(bytes)
	l.dlvAcks++
	span := now - l.dlvStart
	if l.dlvAcks < deliverAcks || span < deliverSpan {
		return
	}
	l.dlvMin.add(now, span*int64(full)/l.dlvBytes, bucket)
	l.dlvStart = 0
	l.update()
}

// update recomputes the estimate. With a tight ring of pair samples (its
// lower quartile at least half its median: the pairs met in a FIFO and
// came out a packet time apart, give or take the noise of reading them)
// the median, which neither the squeezed nor the inflated samples move
// while they are under half. With a spread ring (a shaper letting clumps
// out at the line's pace, so that many gaps are far below the packet
// time) the highest pair, at most the delivery bound; the lowest pair
// while there is no delivery sample.
func (l *linkRate) update() {
	n := int(l.ringN)
	if n == 0 {
		l.est = 0 // the delivery rate alone may be any share of the link
		return
	}
	var s [pairRing]int32
	copy(s[:], l.ring[:n])
	slices.Sort(s[:n])
	lo, mid, hi := int64(s[n/4]), int64(s[n/2]), int64(s[n-1])
	est := l.pairMin.min
	switch {
	case 2*lo >= mid:
		est = mid
	case l.dlvMin.min != 0:
		est = hi
	}
	if l.dlvMin.min != 0 {
		est = min(est, l.dlvMin.min)
	}
	l.est = est
}
