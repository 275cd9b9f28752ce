//go:build linux

package testnet

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Shape is a rate limit with a bounded queue, put on a device's egress.
type Shape struct {
	Rate uint64 // bits per second, counted on Ethernet frames (UDP payload + 42 bytes); 0 means no shaping
	// Burst is the bytes that may leave at line rate after an idle spell;
	// 0 means 32 KiB; at least 1600. The shaper's timer runs in softirq,
	// late when the machine is busy: tokens beyond Burst are lost then, and
	// the rate falls short. For rate accuracy on a shared machine use 10 to
	// 20 ms worth of Rate (the package tests use 20 ms).
	Burst int
	Limit int // bytes of queue before drops; 0 means 64 KiB; queueing delay is up to Limit/Rate
	// HTB selects an HTB root with one class (1:10, rate = ceil = Rate,
	// burst = cburst = Burst) and a bfifo leaf of Limit bytes, in place of
	// a TBF root. Its root qdisc's counters cover the class.
	HTB bool
}

const (
	defaultBurst = 32 << 10
	defaultLimit = 64 << 10
)

func (s Shape) withDefaults() Shape {
	if s.Burst == 0 {
		s.Burst = defaultBurst
	}
	if s.Limit == 0 {
		s.Limit = defaultLimit
	}
	return s
}

// apply replaces the root qdisc of dev in ns with the shaper, or with the
// default (no shaping) when Rate is 0.
func (s Shape) apply(ns, dev string) error {
	// Deleting the default root fails ("handle of zero"); that is fine.
	runCmd("", "tc", "-n", ns, "qdisc", "del", "dev", dev, "root")
	if s.Rate == 0 {
		return nil
	}
	s = s.withDefaults()
	if s.Burst < 1600 {
		return fmt.Errorf("testnet: shape burst %d bytes: must hold a full frame (at least 1600)", s.Burst)
	}
	rate := fmt.Sprintf("%dbit", s.Rate)
	var lines []string
	if s.HTB {
		lines = []string{
			fmt.Sprintf("qdisc add dev %s root handle 1: htb default 10", dev),
			fmt.Sprintf("class add dev %s parent 1: classid 1:10 htb rate %s ceil %s burst %d cburst %d quantum 1514", dev, rate, rate, s.Burst, s.Burst),
			fmt.Sprintf("qdisc add dev %s parent 1:10 handle 10: bfifo limit %d", dev, s.Limit),
		}
	} else {
		lines = []string{fmt.Sprintf("qdisc add dev %s root tbf rate %s burst %d limit %d", dev, rate, s.Burst, s.Limit)}
	}
	if err := batch("tc", ns, lines); err != nil {
		return fmt.Errorf("testnet: %w", err)
	}
	return nil
}

// Qdisc names the root qdisc of device Dev in namespace NS.
type Qdisc struct{ NS, Dev string }

// QdiscStats are the counters of a root qdisc. Packets and Bytes are those
// it has sent (dequeued); Drops are the packets it refused (queue full);
// Overlimits counts the times the shaper held a packet back for lack of
// tokens; Backlog and Qlen are the queue right now, in bytes and packets.
type QdiscStats struct {
	Kind                        string
	Bytes, Packets              uint64
	Drops, Overlimits, Requeues uint64
	Backlog, Qlen               uint64
}

func (a QdiscStats) String() string {
	return fmt.Sprintf("%s: sent %d B %d pkt, dropped %d, overlimits %d, requeues %d, backlog %d B %d pkt",
		a.Kind, a.Bytes, a.Packets, a.Drops, a.Overlimits, a.Requeues, a.Backlog, a.Qlen)
}

// Sub is a − b for the cumulative counters (Backlog and Qlen are a's).
func (a QdiscStats) Sub(b QdiscStats) QdiscStats {
	a.Bytes -= b.Bytes
	a.Packets -= b.Packets
	a.Drops -= b.Drops
	a.Overlimits -= b.Overlimits
	a.Requeues -= b.Requeues
	return a
}

// Stats reads the counters with "tc -s -j qdisc show", or from tc's text
// output if this tc has no JSON (text backlog sizes are rounded to Kb/Mb).
// One call costs a process start (about 10 ms); to follow the queue over
// time use StartSampler.
func (q Qdisc) Stats() (QdiscStats, error) {
	out, err := runCmd("", "tc", "-n", q.NS, "-s", "-j", "qdisc", "show", "dev", q.Dev)
	if err == nil {
		if st, err := parseTCJSON(out); err == nil {
			return st, nil
		}
	}
	out, err = runCmd("", "tc", "-n", q.NS, "-s", "qdisc", "show", "dev", q.Dev)
	if err != nil {
		return QdiscStats{}, fmt.Errorf("testnet: %w", err)
	}
	return parseTCText(out)
}

func parseTCJSON(out []byte) (QdiscStats, error) {
	var qs []struct {
		Kind                              string
		Root                              bool
		Bytes, Packets, Drops, Overlimits uint64
		Requeues, Backlog, Qlen           uint64
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &qs); err != nil {
		return QdiscStats{}, err
	}
	for _, q := range qs {
		if q.Root {
			return QdiscStats{q.Kind, q.Bytes, q.Packets, q.Drops, q.Overlimits, q.Requeues, q.Backlog, q.Qlen}, nil
		}
	}
	return QdiscStats{}, errors.New("testnet: tc shows no root qdisc")
}

var (
	tcHeadRE    = regexp.MustCompile(`(?m)^qdisc (\S+) \S+ root\b`)
	tcSentRE    = regexp.MustCompile(`Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)`)
	tcBacklogRE = regexp.MustCompile(`backlog ([0-9.]+)([KMG]?)b (\d+)p`)
)

// parseTCText reads the root qdisc's block of "tc -s qdisc show dev X".
func parseTCText(out []byte) (QdiscStats, error) {
	loc := tcHeadRE.FindSubmatchIndex(out)
	if loc == nil {
		return QdiscStats{}, fmt.Errorf("testnet: no root qdisc in tc output %q", out)
	}
	st := QdiscStats{Kind: string(out[loc[2]:loc[3]])}
	block := out[loc[0]:]
	if next := bytes.Index(block[1:], []byte("\nqdisc ")); next >= 0 {
		block = block[:next+1]
	}
	m := tcSentRE.FindSubmatch(block)
	if m == nil {
		return st, fmt.Errorf("testnet: no counters in tc output %q", block)
	}
	for i, p := range []*uint64{&st.Bytes, &st.Packets, &st.Drops, &st.Overlimits, &st.Requeues} {
		*p, _ = strconv.ParseUint(string(m[i+1]), 10, 64)
	}
	if m := tcBacklogRE.FindSubmatch(block); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[string(m[2])]
		st.Backlog = uint64(math.Round(v * mult))
		st.Qlen, _ = strconv.ParseUint(string(m[3]), 10, 64)
	}
	return st, nil
}

// BacklogSample is one reading of a qdisc by a Sampler.
type BacklogSample struct {
	At      time.Duration // since the sampler started
	Backlog uint32        // bytes queued
	Qlen    uint32        // packets queued
	Drops   uint32        // cumulative
	Bytes   uint64        // cumulative bytes sent
}

// Sampler reads a qdisc's counters at a fixed interval from a goroutine,
// over an rtnetlink socket opened in the qdisc's namespace (a tc process
// per reading would take about 10 ms; a netlink request takes tens of µs).
type Sampler struct {
	stop    chan struct{}
	done    chan struct{}
	samples []BacklogSample
	err     error
	once    sync.Once
}

// StartSampler starts reading the qdisc every interval (1 ms is fine) until
// Stop. Sampling is on the Go timer, so under load some intervals stretch:
// use each sample's At, not its index.
func (q Qdisc) StartSampler(every time.Duration) (*Sampler, error) {
	nl, err := openQdiscNL(q.NS, q.Dev)
	if err != nil {
		return nil, err
	}
	if _, err := nl.get(); err != nil {
		nl.close()
		return nil, err
	}
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer nl.close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		start := time.Now()
		for {
			st, err := nl.get()
			if err != nil {
				s.err = err
				return
			}
			s.samples = append(s.samples, BacklogSample{
				At: time.Since(start), Backlog: uint32(st.Backlog), Qlen: uint32(st.Qlen),
				Drops: uint32(st.Drops), Bytes: st.Bytes,
			})
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s, nil
}

// Stop ends the sampling and returns the samples.
func (s *Sampler) Stop() ([]BacklogSample, error) {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return s.samples, s.err
}

// statsNL reads the counters once over netlink, without a tc process.
func (q Qdisc) statsNL() (QdiscStats, error) {
	nl, err := openQdiscNL(q.NS, q.Dev)
	if err != nil {
		return QdiscStats{}, err
	}
	defer nl.close()
	return nl.get()
}

// qdiscNL asks rtnetlink for one device's root qdisc (RTM_GETQDISC with
// parent TC_H_ROOT and NLM_F_ECHO: the kernel answers with a single
// RTM_NEWQDISC).
type qdiscNL struct {
	fd      int
	ifindex int32
	seq     uint32
	buf     []byte
}

func openQdiscNL(ns, dev string) (*qdiscNL, error) {
	nl := &qdiscNL{fd: -1, buf: make([]byte, 1<<16)}
	err := In(ns, func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		nl.ifindex = int32(ifi.Index)
		nl.fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		return err
	})
	if err == nil {
		err = unix.Bind(nl.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	if err == nil {
		// Do not wait forever for an answer that does not come.
		tv := unix.NsecToTimeval(int64(time.Second))
		err = unix.SetsockoptTimeval(nl.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err != nil {
		nl.close()
		return nil, fmt.Errorf("testnet: netlink for %s in %s: %w", dev, ns, err)
	}
	return nl, nil
}

func (nl *qdiscNL) close() {
	if nl.fd >= 0 {
		unix.Close(nl.fd)
		nl.fd = -1
	}
}

// Not all of these are in x/sys/unix.
const (
	tcaStatsBasic = 1 // TCA_STATS_BASIC: struct gnet_stats_basic
	tcaStatsQueue = 3 // TCA_STATS_QUEUE: struct gnet_stats_queue
	tcaStatsPkt64 = 8 // TCA_STATS_PKT64: u64 packets
	sizeofTcMsg   = 20
	tcHRoot       = 0xFFFFFFFF
)

func (nl *qdiscNL) get() (QdiscStats, error) {
	nl.seq++
	ne := binary.NativeEndian
	req := make([]byte, unix.SizeofNlMsghdr+sizeofTcMsg)
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETQDISC)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_ECHO) // the answer is a notification: ask for our copy
	ne.PutUint32(req[8:], nl.seq)
	// tcmsg: family, pad, pad, ifindex, handle, parent, info.
	ne.PutUint32(req[unix.SizeofNlMsghdr+4:], uint32(nl.ifindex))
	ne.PutUint32(req[unix.SizeofNlMsghdr+12:], tcHRoot)
	if err := unix.Sendto(nl.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return QdiscStats{}, fmt.Errorf("testnet: netlink send: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(nl.fd, nl.buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return QdiscStats{}, fmt.Errorf("testnet: netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(nl.buf[:n])
		if err != nil {
			return QdiscStats{}, err
		}
		for _, m := range msgs {
			if m.Header.Seq != nl.seq {
				continue // a late answer to an earlier request
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(ne.Uint32(m.Data)); errno != 0 {
						return QdiscStats{}, fmt.Errorf("testnet: RTM_GETQDISC: %w", unix.Errno(-errno))
					}
				}
			case unix.RTM_NEWQDISC:
				return parseQdiscMsg(m.Data)
			}
		}
	}
}

// parseQdiscMsg reads a tcmsg and its attributes: TCA_KIND and the nested
// TCA_STATS2 (basic and queue statistics).
func parseQdiscMsg(b []byte) (QdiscStats, error) {
	var st QdiscStats
	if len(b) < sizeofTcMsg {
		return st, errors.New("testnet: short RTM_NEWQDISC")
	}
	ne := binary.NativeEndian
	var pkt64 uint64
	var have bool
	eachAttr(b[sizeofTcMsg:], func(typ uint16, v []byte) {
		switch typ {
		case unix.TCA_KIND:
			st.Kind = string(bytes.TrimRight(v, "\x00"))
		case unix.TCA_STATS2:
			eachAttr(v, func(typ uint16, v []byte) {
				switch {
				case typ == tcaStatsBasic && len(v) >= 12:
					st.Bytes = ne.Uint64(v)
					st.Packets = uint64(ne.Uint32(v[8:]))
					have = true
				case typ == tcaStatsPkt64 && len(v) >= 8:
					pkt64 = ne.Uint64(v)
				case typ == tcaStatsQueue && len(v) >= 20:
					st.Qlen = uint64(ne.Uint32(v))
					st.Backlog = uint64(ne.Uint32(v[4:]))
					st.Drops = uint64(ne.Uint32(v[8:]))
					st.Requeues = uint64(ne.Uint32(v[12:]))
					st.Overlimits = uint64(ne.Uint32(v[16:]))
				}
			})
		}
	})
	if pkt64 != 0 {
		st.Packets = pkt64
	}
	if !have {
		return st, errors.New("testnet: RTM_NEWQDISC without statistics")
	}
	return st, nil
}

func eachAttr(b []byte, fn func(typ uint16, v []byte)) {
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l := int(ne.Uint16(b))
		typ := ne.Uint16(b[2:]) & 0x3fff // drop NLA_F_NESTED and NLA_F_NET_BYTEORDER
		if l < 4 || l > len(b) {
			return
		}
		fn(typ, b[4:l])
		l = (l + 3) &^ 3
		if l > len(b) {
			return
		}
		b = b[l:]
	}
}
