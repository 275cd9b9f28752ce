package cc

// congested says whether the session as a whole is congested, p being the
// path of the latest sample. One path, or round-robin spraying, decides on
// that sample's path. Several chosen paths decide on the median of the
// paths' signals (MSwift): the session is congested only when more than
// half the paths heard from recently are above target. One congested path
// among several is the chooser's business: it moves away from it.
func (c *Controller) congested(p *path) bool {
	if c.k == 1 || c.rr {
		return p.cong
	}
	return 2*c.nCong > c.nVote
}

// count updates the vote for p's new signal cong.
func (c *Controller) count(p *path, cong bool) {
	if !p.vote {
		p.vote = true
		c.nVote++
		p.cong = false
	}
	if cong != p.cong {
		if cong {
			c.nCong++
		} else {
			c.nCong--
		}
	}
}

// expire takes p out of the vote when it has not been heard from for a
// while: a path the chooser avoids must not keep voting with old news.
func (c *Controller) expire(now int64, p *path) {
	if p.vote && now-p.lastSample > p.staleAfter() {
		p.vote = false
		c.nVote--
		if p.cong {
			p.cong = false
			c.nCong--
		}
	}
}

// queued is the fraction of the delay that is queueing, (delay-base)/delay,
// which sizes a cut: Beta of it is the share of this session's packets that
// sit in the queue (see the package documentation for why the base and not
// the target). It is the sample's path's own, or with several chosen paths
// the median over the voting paths. It runs at most once per RTT, so it
// may look at every path (and expire the stale ones first); ok is false
// when the majority turns out to be gone.
func (c *Controller) queued(now int64, p *path) (x float64, ok bool) {
	if c.k == 1 || c.rr {
		return queuedFrac(p), true
	}
	var xs [MaxPaths]float64
	n := 0
	hold := int64(0)
	for i := range c.k {
		q := c.path(i)
		c.expire(now, q)
		if q.vote {
			xs[n] = queuedFrac(q)
			n++
			hold = max(hold, q.srtt)
		}
	}
	if !c.congested(p) {
		return 0, false
	}
	c.cutHold = hold
	return nth(xs[:n], n/2), true
}

func queuedFrac(p *path) float64 {
	return float64(p.delay-p.base.min) / float64(p.delay)
}

// nth returns the k-th smallest of xs (Hoare's selection), reordering xs.
func nth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// PickPath chooses the path of a new packet. With one path it is 0. Round
// robin takes the paths in turn. Otherwise it is the power of two choices
// (UCCL): of two distinct random paths, the one with the lower estimated
// queueing delay, so that load leaves a queue as it builds; a path never
// measured, or not heard of for a while, counts as idle and gets tried. A
// suspect path is taken only when every path is suspect. rnd is a random
// 64-bit value.
func (c *Controller) PickPath(now int64, rnd uint64) int {
	if c.k == 1 {
		return 0
	}
	if c.rr {
		return c.roundRobin(now, -1)
	}
	a := pick(uint32(rnd), c.k)
	b := pick(uint32(rnd>>32), c.k-1)
	if b >= a {
		b++
	}
	return c.better(now, a, b, -1)
}

// RetransmitPath chooses the path of a retransmission: another path than
// lost, the one the lost copy went on, when there are several; the lost one
// may be the broken one.
func (c *Controller) RetransmitPath(now int64, lost int, rnd uint64) int {
	if c.k == 1 {
		return 0
	}
	if c.rr {
		return c.roundRobin(now, lost)
	}
	if c.k == 2 {
		return c.settle(now, 1-lost, lost)
	}
	a := pick(uint32(rnd), c.k-1)
	if a >= lost {
		a++
	}
	b := pick(uint32(rnd>>32), c.k-2)
	lo, hi := min(a, lost), max(a, lost)
	if b >= lo {
		b++
	}
	if b >= hi {
		b++
	}
	return c.better(now, a, b, lost)
}

// pick maps 32 random bits to [0, n) without a division (Lemire).
func pick(r uint32, n int) int { return int(uint64(r) * uint64(n) >> 32) }

// better returns the one of paths a and b with the lower queueing delay,
// a when they tie; a suspect one only if both are, and then only if no
// other path (except avoid) is usable.
func (c *Controller) better(now int64, a, b, avoid int) int {
	pa, pb := c.path(a), c.path(b)
	sa, sb := pa.suspect(now), pb.suspect(now)
	// Keep the vote honest about the paths the chooser looks at.
	c.expire(now, pa)
	c.expire(now, pb)
	switch {
	case !sa && !sb:
		if pb.queueing(now) < pa.queueing(now) {
			return b
		}
		return a
	case !sa:
		return a
	case !sb:
		return b
	}
	return c.settle(now, a, avoid)
}

// settle returns from, if it is not suspect, else the first path after it
// (except avoid) that is not suspect, else the path other than avoid whose
// suspicion ends first.
func (c *Controller) settle(now int64, from, avoid int) int {
	best := -1
	for n := range c.k {
		i := (from + n) % c.k
		if i == avoid {
			continue
		}
		p := c.path(i)
		if !p.suspect(now) {
			return i
		}
		if best < 0 || p.suspectUntil < c.path(best).suspectUntil {
			best = i
		}
	}
	return best
}

// roundRobin returns the next path in turn that is neither avoid nor
// suspect (if any is not).
func (c *Controller) roundRobin(now int64, avoid int) int {
	i := c.rrNext
	if i == avoid {
		i = (i + 1) % c.k
	}
	i = c.settle(now, i, avoid)
	c.rrNext = (i + 1) % c.k
	return i
}
