package cc

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/erpc-go/erpc/internal/heapq"
)

// This file is a small discrete-event model of senders sharing bottleneck
// links: each link is a FIFO served at a fixed packet rate, with a
// propagation delay split evenly between the two directions, an optional
// queue limit (tail drop) and optional random loss. Each sender is one
// Controller with an unlimited backlog (or a fixed number of packets),
// sending whenever its window and pacer allow. Its RTT sample is the time
// from the send to the processing of the acknowledgement, so host stalls
// injected on the sender (GC pauses) enter it exactly as they would in a Go
// client; timestamp noise (jitter, spikes) can be added to the sample
// alone. A lost packet is reported to the sender one packet time after its
// acknowledgement would have come, as the engine's fast retransmit would.

const pktBytes = 1472

type link struct {
	tau   int64   // service time of one packet
	prop  int64   // round-trip propagation delay
	limit int     // queue limit in packets; 0: unlimited
	loss  float64 // random loss probability

	// A token-bucket shaper (tc's TBF) instead of a fixed-rate link:
	// burst packets' worth of tokens, one more every tau; a packet with a
	// token leaves at the line's own pace, line (a veth: a microsecond).
	burst float64
	line  int64
	// late > 0: the shaper's timer, armed for the moment the next packet
	// has its token, fires late by an exponential time of mean late (a
	// loaded host's softirq): the tokens gathered meanwhile let the queue
	// out in a clump at the line's pace.
	late int64

	busy   int64   // when the packet last queued leaves
	tokens float64 // shaper: tokens at tokenT
	tokenT int64
}

// depart returns when a packet that reaches the link at t leaves it, and
// updates the link.
func (l *link) depart(t, late int64) int64 {
	if l.burst == 0 {
		dep := max(l.busy, t) + l.tau
		l.busy = dep
		return dep
	}
	d := max(l.busy, t)
	tok := min(l.burst, l.tokens+float64(d-l.tokenT)/float64(l.tau))
	if tok < 1 {
		d += int64((1-tok)*float64(l.tau)) + late
		tok = min(l.burst, 1+float64(late)/float64(l.tau))
	}
	l.tokens, l.tokenT = tok-1, d
	l.busy = d + l.line
	return l.busy
}

type simConfig struct {
	seed    uint64
	senders int
	links   []link // the paths; every sender uses all of them
	cc      Config
	dur     int64 // end of the run
	measure int64 // start of the measurement window

	start func(i int) int64 // sender i's start; default 0
	pkts  func(i int) int   // sender i's packets; default unlimited

	jitter    int64   // uniform [0, jitter) added to every sample
	spikeProb float64 // probability that a sample gets spike added
	spike     int64

	gcSender         int   // sender that pauses; -1 for none
	gcEvery, gcPause int64 // period and length of its pauses
	stallEvery       int64 // mean interval between late wake-ups of each sender (Poisson)
	stallMax         int64 // which last [0, stallMax)

	trace func(s *sim) // called every traceEvery
	every int64

	// Open-loop load (model_load_test.go): packets arrive at each sender
	// every interarrival on average (Poisson) instead of a backlog; their
	// latency is from arrival to acknowledgement. linkStallEvery and
	// linkStallMax stop link 0 now and then (a starved server that does
	// not read its socket); nocc sends with no window and no pacer.
	interarrival   int64
	linkStallEvery int64
	linkStallMax   int64
	nocc           bool
	// rto > 0: a packet not acknowledged within max(rto, 2 srtt) is given
	// up (OnTimeout) and sent again at once on its credit, as the engine's
	// retransmission timer does; the late answer to the first copy is
	// dropped (it names no in-flight record).
	rto int64
}

type event struct {
	t    int64
	seq  uint64
	kind uint8
	s    int32
	path int16
	sent int64
	born int64 // open loop: when the packet arrived at the sender
	id   uint64
}

const (
	evStart = iota
	evArrive
	evAck
	evLost
	evWake
	evPause
	evResume
	evStall
	evArrival
	evLinkStall
	evRTO
)

type sender struct {
	c         Controller
	start     int64
	left      int // packets left to send; <0 unlimited
	inflight  int
	wakeAt    int64
	pauseTill int64
	done      int64 // time the last packet was acknowledged (finite senders)

	acked     int // acknowledged packets in the measurement window
	ackedAll  int
	minCwnd   float64
	maxCwnd   float64
	cuts      int
	timeouts  int
	overTgt   int // raw samples above the target (would have cut, unfiltered)
	spikes    int
	pauses    int
	stalls    int
	perPath   []int
	notBypass int     // acknowledgements seen while not in bypass
	born      []int64 // open loop: arrival times of the packets waiting
	pending   map[uint64]bool
	nextID    uint64
	rtos      int
}

type sim struct {
	cfg   simConfig
	rng   *rand.Rand
	q     heapq.Heap[event]
	seq   uint64
	now   int64
	links []link
	s     []sender

	maxQueue    int64   // largest queueing delay in the measurement window
	tqSum       float64 // sum of the target queueing of the acknowledged packets' senders
	tdSum       float64 // and of their target delay
	tqN         int
	maxQueueAll int64
	queueSum    float64 // time-weighted queueing delay of link 0 samples
	queueN      int
	drops       int
	lost        int
	delivered   []int   // per link, in the measurement window
	latency     []int64 // open loop: arrival to acknowledgement, measured packets
	linkStalls  int
}

func newSim(cfg simConfig) *sim {
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x9e3779b97f4a7c15))}
	s.q.Less = func(a, b *event) bool {
		if a.t != b.t {
			return a.t < b.t
		}
		return a.seq < b.seq
	}
	s.links = append([]link(nil), cfg.links...)
	s.delivered = make([]int, len(s.links))
	s.s = make([]sender, cfg.senders)
	for i := range s.s {
		sd := &s.s[i]
		sd.c.Init(cfg.cc, len(s.links))
		sd.left = -1
		if cfg.pkts != nil {
			sd.left = cfg.pkts(i)
		}
		if cfg.start != nil {
			sd.start = cfg.start(i)
		}
		sd.minCwnd, sd.maxCwnd = math.Inf(1), 0
		sd.perPath = make([]int, len(s.links))
		s.push(event{t: sd.start, kind: evStart, s: int32(i)})
		if cfg.stallEvery > 0 {
			s.push(event{t: s.expo(cfg.stallEvery), kind: evStall, s: int32(i)})
		}
	}
	if cfg.interarrival > 0 {
		for i := range s.s {
			s.s[i].left = 0
			s.push(event{t: s.expo(cfg.interarrival), kind: evArrival, s: int32(i)})
		}
	}
	if cfg.linkStallEvery > 0 {
		s.push(event{t: s.expo(cfg.linkStallEvery), kind: evLinkStall})
	}
	if cfg.gcSender >= 0 && cfg.gcEvery > 0 {
		s.push(event{t: cfg.gcEvery / 2, kind: evPause, s: int32(cfg.gcSender)})
	}
	return s
}

func (s *sim) push(e event) {
	s.seq++
	e.seq = s.seq
	s.q.Push(e)
}

func (s *sim) run() *sim {
	next := s.cfg.every
	for s.q.Len() > 0 {
		e := s.q.Pop()
		if e.t > s.cfg.dur {
			break
		}
		for s.cfg.trace != nil && next <= e.t {
			s.now = next
			s.cfg.trace(s)
			next += s.cfg.every
		}
		s.now = e.t
		s.handle(e)
	}
	s.now = s.cfg.dur
	return s
}

func (s *sim) handle(e event) {
	sd := &s.s[e.s]
	switch e.kind {
	case evStart:
		s.trySend(int(e.s))
	case evWake:
		if sd.wakeAt == e.t {
			sd.wakeAt = 0
		}
		s.trySend(int(e.s))
	case evArrive:
		s.arrive(e)
	case evRTO:
		if !sd.pending[e.id] {
			return
		}
		if sd.pauseTill > e.t { // the timer runs when the sender does
			e.t = sd.pauseTill
			s.push(e)
			return
		}
		delete(sd.pending, e.id)
		sd.rtos++
		sd.c.OnTimeout(e.t, int(e.path))
		s.send(int(e.s), int(e.path), e.born) // the copy takes the credit
	case evAck, evLost:
		if sd.pauseTill > e.t {
			e.t = sd.pauseTill
			s.push(e) // processed when the sender runs again, in order
			return
		}
		if s.cfg.rto > 0 && e.kind == evAck {
			if !sd.pending[e.id] {
				return // the answer to a copy given up: no record, no sample
			}
			delete(sd.pending, e.id)
		}
		if e.kind == evAck {
			s.ack(sd, e)
		} else {
			sd.timeouts++
			sd.c.OnTimeout(e.t, int(e.path))
			if sd.left >= 0 {
				sd.left++ // resend it
			}
		}
		sd.inflight--
		s.observe(sd)
		s.trySend(int(e.s))
	case evPause:
		sd.pauseTill = e.t + s.cfg.gcPause
		sd.pauses++
		s.push(event{t: sd.pauseTill, kind: evResume, s: e.s})
		s.push(event{t: e.t + s.cfg.gcEvery, kind: evPause, s: e.s})
	case evResume:
		s.trySend(int(e.s))
	case evStall:
		// A late wake-up: the sender stops for a while, as in a pause.
		if till := e.t + s.rng.Int64N(s.cfg.stallMax); till > sd.pauseTill {
			sd.pauseTill = till
			sd.stalls++
			s.push(event{t: till, kind: evResume, s: e.s})
		}
		s.push(event{t: e.t + s.expo(s.cfg.stallEvery), kind: evStall, s: e.s})
	case evArrival:
		sd.left++
		sd.born = append(sd.born, e.t)
		s.push(event{t: e.t + s.expo(s.cfg.interarrival), kind: evArrival, s: e.s})
		s.trySend(int(e.s))
	case evLinkStall:
		l := &s.links[0]
		l.busy = max(l.busy, e.t) + s.rng.Int64N(s.cfg.linkStallMax)
		s.linkStalls++
		s.push(event{t: e.t + s.expo(s.cfg.linkStallEvery), kind: evLinkStall})
	}
}

func (s *sim) arrive(e event) {
	l := &s.links[e.path]
	wait := max(l.busy-e.t, 0)
	lost := l.loss > 0 && s.rng.Float64() < l.loss
	if l.limit > 0 && wait > int64(l.limit)*l.tau {
		s.drops++
		lost = true
	}
	if lost {
		s.lost++
		s.push(event{t: max(l.busy, e.t) + l.tau + l.prop/2 + l.tau, kind: evLost, s: e.s, path: e.path, sent: e.sent})
		return
	}
	late := int64(0)
	if l.late > 0 {
		late = s.expo(l.late) - 1
	}
	dep := l.depart(e.t, late)
	if e.t >= s.cfg.measure {
		s.maxQueue = max(s.maxQueue, wait)
		s.queueSum += float64(wait)
		s.queueN++
		s.delivered[e.path]++
	}
	s.maxQueueAll = max(s.maxQueueAll, wait)
	s.push(event{t: dep + l.prop/2, kind: evAck, s: e.s, path: e.path, sent: e.sent, born: e.born, id: e.id})
}

func (s *sim) ack(sd *sender, e event) {
	rtt := e.t - e.sent
	if s.cfg.jitter > 0 {
		rtt += s.rng.Int64N(s.cfg.jitter)
	}
	if s.cfg.spikeProb > 0 && s.rng.Float64() < s.cfg.spikeProb {
		rtt += s.cfg.spike
		sd.spikes++
	}
	if !sd.c.Bypass() && e.t >= s.cfg.measure {
		sd.notBypass++
	}
	if rtt > int64(sd.c.Target(int(e.path))) && sd.c.BaseRTT(int(e.path)) > 0 {
		sd.overTgt++
	}
	before := sd.c.Window()
	sd.c.OnAck(e.t, time.Duration(rtt), pktBytes, int(e.path), false)
	if sd.c.Window() < before {
		sd.cuts++
	}
	sd.ackedAll++
	if e.t >= s.cfg.measure {
		sd.acked++
		s.tqSum += float64(sd.c.Target(int(e.path)) - sd.c.BaseRTT(int(e.path)))
		s.tdSum += float64(sd.c.Target(int(e.path)))
		s.tqN++
	}
	if sd.left == 0 && sd.inflight == 1 {
		sd.done = e.t
	}
	if e.born != 0 && e.born >= s.cfg.measure {
		s.latency = append(s.latency, e.t-e.born)
	}
}

func (s *sim) observe(sd *sender) {
	if s.now >= s.cfg.measure {
		sd.minCwnd = min(sd.minCwnd, sd.c.Window())
		sd.maxCwnd = max(sd.maxCwnd, sd.c.Window())
	}
}

func (s *sim) trySend(i int) {
	sd := &s.s[i]
	if sd.pauseTill > s.now || s.now < sd.start {
		return
	}
	for sd.left != 0 && (sd.inflight < sd.c.Allowed() || s.cfg.nocc && sd.inflight < 32) {
		if nx := sd.c.NextSend(s.now); nx > s.now && !s.cfg.nocc {
			if sd.wakeAt == 0 || nx < sd.wakeAt {
				sd.wakeAt = nx
				s.push(event{t: nx, kind: evWake, s: int32(i)})
			}
			return
		}
		p := sd.c.PickPath(s.now, s.rng.Uint64())
		sd.inflight++
		if sd.left > 0 {
			sd.left--
		}
		var born int64
		if len(sd.born) > 0 {
			born, sd.born = sd.born[0], sd.born[1:]
		}
		s.send(i, p, born)
	}
}

// send puts a packet of sender i on path p (its credit already taken).
func (s *sim) send(i, p int, born int64) {
	sd := &s.s[i]
	sd.c.OnSend(s.now, pktBytes, p)
	sd.perPath[p]++
	sd.nextID++
	e := event{t: s.now + s.links[p].prop/2, kind: evArrive, s: int32(i), path: int16(p), sent: s.now, born: born, id: sd.nextID}
	s.push(e)
	if s.cfg.rto > 0 {
		if sd.pending == nil {
			sd.pending = map[uint64]bool{}
		}
		sd.pending[e.id] = true
		e.t, e.kind = s.now+max(s.cfg.rto, 2*int64(sd.c.SRTT())), evRTO
		s.push(e)
	}
}

// expo draws an exponential interval of the given mean.
func (s *sim) expo(mean int64) int64 { return int64(s.rng.ExpFloat64()*float64(mean)) + 1 }

// jain is Jain's fairness index of xs: 1 when all are equal, 1/n when one
// has everything.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// throughputs returns each sender's acknowledged packets in the
// measurement window.
func (s *sim) throughputs() []float64 {
	xs := make([]float64, len(s.s))
	for i := range s.s {
		xs[i] = float64(s.s[i].acked)
	}
	return xs
}

// utilization is the fraction of link l's capacity delivered in the
// measurement window.
func (s *sim) utilization(l int) float64 {
	capacity := float64(s.cfg.dur-s.cfg.measure) / float64(s.links[l].tau)
	return float64(s.delivered[l]) / capacity
}

// targetQueue is the mean queueing delay the senders tolerated in the
// measurement window (target less base, averaged over acknowledgements).
func (s *sim) targetQueue() int64 { return int64(s.tqSum / float64(max(s.tqN, 1))) }

// targetDelay is the mean target delay in the measurement window.
func (s *sim) targetDelay() int64 { return int64(s.tdSum / float64(max(s.tqN, 1))) }

// meanQueue is the mean queueing delay of the packets that arrived in the
// measurement window.
func (s *sim) meanQueue() int64 { return int64(s.queueSum / float64(max(s.queueN, 1))) }

func us(d int64) float64 { return float64(d) / 1e3 }
