package resolver

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// testDNSServer is a minimal authoritative DNS responder over UDP on
// loopback, for A, AAAA and SRV questions: enough for Go's resolver to
// query it as the server a dns://host:port/ target names.
type testDNSServer struct {
	pc      net.PacketConn
	mu      sync.Mutex
	ips     map[string][]net.IP // name (lower case, no final dot)
	srvs    map[string][]net.SRV
	queries atomic.Int64
}

const (
	typeA    = 1
	typeAAAA = 28
	typeSRV  = 33
)

func startTestDNSServer(t *testing.T) *testDNSServer {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testDNSServer{pc: pc, ips: map[string][]net.IP{}, srvs: map[string][]net.SRV{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serve()
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return s
}

func (s *testDNSServer) addr() string { return s.pc.LocalAddr().String() }

// setIPs replaces name's A and AAAA records.
func (s *testDNSServer) setIPs(name string, ips ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ips[name] = nil
	for _, ip := range ips {
		s.ips[name] = append(s.ips[name], net.ParseIP(ip))
	}
}

func (s *testDNSServer) setSRV(name string, recs ...net.SRV) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srvs[name] = recs
}

func (s *testDNSServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, err := s.answer(buf[:n]); err == nil {
			s.queries.Add(1)
			s.pc.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query: the question echoed, then the
// records, each naming the question by a pointer to offset 12.
func (s *testDNSServer) answer(q []byte) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, errors.New("not one question")
	}
	name, end, err := readName(q, 12)
	if err != nil || end+4 > len(q) {
		return nil, errors.New("bad question")
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	question := q[12 : end+4]
	s.mu.Lock()
	ips, knownIP := s.ips[name]
	srvs, knownSRV := s.srvs[name]
	s.mu.Unlock()
	var answers [][]byte // type, rdata pairs flattened below
	var types []uint16
	switch qtype {
	case typeA, typeAAAA:
		for _, ip := range ips {
			if v4 := ip.To4(); v4 != nil && qtype == typeA {
				answers, types = append(answers, v4), append(types, typeA)
			} else if v4 == nil && qtype == typeAAAA {
				answers, types = append(answers, ip.To16()), append(types, typeAAAA)
			}
		}
	case typeSRV:
		for _, r := range srvs {
			rd := binary.BigEndian.AppendUint16(nil, r.Priority)
			rd = binary.BigEndian.AppendUint16(rd, r.Weight)
			rd = binary.BigEndian.AppendUint16(rd, r.Port)
			answers, types = append(answers, appendName(rd, r.Target)), append(types, typeSRV)
		}
	}
	flags := uint16(0x8400) | binary.BigEndian.Uint16(q[2:])&0x0100 // QR, AA, the query's RD
	if !knownIP && !knownSRV {
		flags |= 3 // NXDOMAIN
	}
	resp := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q))
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = append(resp, 0, 1, byte(len(answers)>>8), byte(len(answers)), 0, 0, 0, 0)
	resp = append(resp, question...)
	for i, rd := range answers {
		resp = append(resp, 0xc0, 12)
		resp = binary.BigEndian.AppendUint16(resp, types[i])
		resp = append(resp, 0, 1, 0, 0, 0, 0) // class IN, TTL 0
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rd)))
		resp = append(resp, rd...)
	}
	return resp, nil
}

// readName reads an uncompressed name (queries carry no pointers).
func readName(b []byte, off int) (string, int, error) {
	var labels []string
	for off < len(b) {
		n := int(b[off])
		off++
		if n == 0 {
			return strings.ToLower(strings.Join(labels, ".")), off, nil
		}
		if n > 63 || off+n > len(b) {
			return "", 0, errors.New("bad label")
		}
		labels = append(labels, string(b[off:off+n]))
		off += n
	}
	return "", 0, errors.New("name runs off the end")
}

func appendName(b []byte, name string) []byte {
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0)
}
