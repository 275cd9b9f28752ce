package cc

// The link-rate estimate of a path: the time one full packet takes to
// cross its bottleneck, under the link floor of the delay target (see
// linkFloor). Two measurements, each wrong in its own way, give it:
//
//   - packet pairs (pair): two packets that met in the bottleneck queue
//     come out spaced by the second one's time there. Packets of other
//     senders between the two widen a gap, so the lowest sample was right
//     on a FIFO link however many shared it; but a token-bucket shaper
//     whose timer fires late (tc's TBF on a loaded host) lets the queue
//     out in clumps at the line's pace, and a client that reads two
//     acknowledgements in one wake-up squeezes their gap, so on such a
//     path the lowest sample is far too low (16-97 µs of 242 at 50
//     Mbit/s on the test bed, where the median of the samples was 241).
//     The path keeps the last pairRing samples and takes their median:
//     neither the squeezed nor the widened samples move it while each
//     kind is under half.
//   - the delivery rate (deliver): the session's own bytes acknowledged
//     over an interval of at least deliverAcks acknowledgements and
//     deliverSpan, opened on a packet that queued. A clump or a late read
//     moves at most one burst into or out of an interval that long, so
//     the highest rate over the base RTT's window (BBR's windowed max)
//     is the shaper's rate within a few percent; it is the session's
//     share, not the link's, when others share the link, and lower when
//     the session leaves the link idle: an upper bound of the packet
//     time, never an estimate by itself.
//
// The estimate is the pairs' median, never more than the delivery bound:
// alone on a shaper whose timer runs late, the gaps that took in the
// lateness can be half the samples and more (the model's 1 Gbit/s with
// a timer 100 µs late on average: a median of 6-8 packet times), and the
// bound brings it back; shared, the bound is far above and the pairs
// decide. What it cannot do: when more than half of the pairs are
// squeezed, the median is too low, as the minimum always was.

import "slices"

// pairRing is how many recent packet-pair samples a path keeps.
const pairRing = 32

// deliverAcks and deliverSpan are the least acknowledgements and time a
// delivery-rate interval spans: long against a shaper's clumps (the
// tens to hundreds of microseconds its timer runs late on a loaded host)
// and against a slow link's packet time.
const (
	deliverAcks = 64
	deliverSpan = 32e6 // ns
)

// linkRate is what a path knows of its bottleneck's rate.
type linkRate struct {
	dlvMin winMin // lowest delivery-rate packet time over the window (the highest rate)
	est    int64  // the estimate: see linkRate.update
	mid    int64  // the median of the pair samples

	ring  [pairRing]int32 // recent pair samples, ns
	ringN uint8
	ringI uint8

	dlvStart int64 // the acknowledgement that opened the interval; 0: none
	dlvBytes int64 // bytes acknowledged since
	dlvAcks  int32
}

// addPair takes a packet-pair sample g (ns, scaled to a full packet).
func (l *linkRate) addPair(g int64) {
	l.ring[l.ringI] = int32(min(g, 1<<31-1))
	l.ringI = (l.ringI + 1) % pairRing
	l.ringN = min(l.ringN+1, pairRing)
	l.update()
}

// deliver counts an acknowledgement at now of bytes, and closes the
// interval into a sample when it is long enough. An interval opens only
// on a packet that queued at the bottleneck (queued, its RTT above the
// base, at least half the tolerated queueing q and half the pairs'
// median, which host noise rarely reaches) and was read in time (not
// stalled). Queued: a token-bucket shaper (tc's TBF, 2 ms of its rate on
// the test bed) then had no tokens left, and from there
// it lets through at most its rate times the interval, whatever the
// interval holds (idle time, clumps); an interval opened on a full
// bucket would count the burst. Read in time: an acknowledgement read
// late, in a batch after a stall of the client, would open it late and
// count the rest of the batch inside it. An open interval runs through
// idle time and stalls (or what looks like one: a late shaper timer
// leaves the same silence), which can only lower its rate.
func (l *linkRate) deliver(now int64, bytes, full int, stalled bool, queued, q int64, bucket int64) {
	if l.dlvStart == 0 {
		if 2*queued >= max(q, l.mid) && !stalled {
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

// update recomputes the estimate: the median of the recent pair samples,
// which neither the squeezed samples (a shaper's clumps, two
// acknowledgements read in one wake-up) nor the inflated ones (another
// sender's packet between the two, a gap that took in a late timer) move
// while each kind is under half of them; at most the delivery bound, which
// holds it when the inflated ones are more.
func (l *linkRate) update() {
	n := int(l.ringN)
	if n == 0 {
		l.est = 0 // the delivery rate alone may be any share of the link
		return
	}
	var s [pairRing]int32
	copy(s[:], l.ring[:n])
	slices.Sort(s[:n])
	l.mid = int64(s[n/2])
	l.est = l.mid
	if l.dlvMin.min != 0 {
		l.est = min(l.est, l.dlvMin.min)
	}
}
