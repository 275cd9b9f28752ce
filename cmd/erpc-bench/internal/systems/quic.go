package systems

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// quic and quic-stream: quic-go (TLS 1.3, as QUIC requires) as a peer
// system, over one connection per client like gRPC's. quic makes each
// call on a new stream (request, FIN; response, FIN); quic-stream keeps
// one long bidirectional stream per client goroutine, one call at a time
// on it. A message is length-prefixed: a request is a method byte (Echo
// or Sink) and a 4-byte length, then the bytes; a response is a 4-byte
// length, then the bytes. One server serves both: it answers every
// message of a stream until the stream's FIN.

const quicALPN = "erpc-bench"

const (
	quicEcho = 0
	quicSink = 1
)

// quicConfig raises the limits that would cap a point: streams in flight
// (a call each) and the flow-control windows (8 MiB calls).
func quicConfig() *quic.Config {
	return &quic.Config{MaxIncomingStreams: 1 << 16, MaxStreamReceiveWindow: 32 << 20,
		MaxConnectionReceiveWindow: 128 << 20, MaxIdleTimeout: time.Minute}
}

type quicServer struct {
	lis *quic.Listener
}

func newQUICServer(proc.Config) (proc.Impl, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	lis, err := quic.ListenAddr("127.0.0.1:0", serverTLS(cert, quicALPN), quicConfig())
	if err != nil {
		return nil, err
	}
	s := &quicServer{lis: lis}
	go s.accept()
	return withCert{s, cert}, nil
}

func (s *quicServer) accept() {
	for {
		conn, err := s.lis.Accept(context.Background())
		if err != nil {
			return
		}
		go func() {
			for {
				st, err := conn.AcceptStream(context.Background())
				if err != nil {
					return
				}
				go serveQUICStream(st)
			}
		}()
	}
}

// serveQUICStream answers each message on st until its FIN, then ends
// its own side.
func serveQUICStream(st *quic.Stream) {
	defer st.Close()
	var hdr [5]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(st, hdr[:]); err != nil {
			return // io.EOF: the client is done with the stream
		}
		n := int(binary.LittleEndian.Uint32(hdr[1:]))
		if cap(buf) < 4+n {
			buf = make([]byte, 4+n)
		}
		buf = buf[:4+n]
		if _, err := io.ReadFull(st, buf[4:]); err != nil {
			st.CancelRead(1)
			return
		}
		resp := buf
		if hdr[0] == quicSink {
			resp = buf[:4+min(32, n)]
		}
		binary.LittleEndian.PutUint32(resp, uint32(len(resp)-4))
		if _, err := st.Write(resp); err != nil {
			return
		}
	}
}

func (s *quicServer) Addr() string { return s.lis.Addr().String() }
func (s *quicServer) Close()       { s.lis.Close() }
func (s *quicServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

// quicClient is quic's and quic-stream's client.
type quicClient struct {
	addr    string
	tlsCfg  *tls.Config
	conn    *quic.Conn
	oneLong bool // quic-stream: one stream per goroutine
}

func newQUICClient(srv *proc.Server, oneLong bool) (meter.Client, error) {
	cfg, err := clientTLS(srv, quicALPN)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr, cfg, quicConfig())
	if err != nil {
		return nil, err
	}
	return &quicClient{addr: srv.Addr, tlsCfg: cfg, conn: conn, oneLong: oneLong}, nil
}

func (c *quicClient) Close() { c.conn.CloseWithError(0, "") }

func (c *quicClient) Run(p meter.Point, m *meter.Meter) error {
	method := byte(quicEcho)
	if p.Resp != p.Size {
		method = quicSink
	}
	ctx := context.Background()
	var mu sync.Mutex
	long := map[int]*quic.Stream{}
	defer func() {
		for _, st := range long {
			st.Close()
		}
	}()
	return runGoroutines(p, m, func(g int, req []byte, resp *RawMsg) error {
		if !c.oneLong {
			st, err := c.conn.OpenStreamSync(ctx)
			if err != nil {
				return err
			}
			err = quicCall(st, method, req, resp, true)
			if err != nil {
				st.CancelRead(1)
				st.CancelWrite(1)
			}
			return err
		}
		mu.Lock()
		st := long[g]
		mu.Unlock()
		if st == nil {
			var err error
			if st, err = c.conn.OpenStreamSync(ctx); err != nil {
				return err
			}
			mu.Lock()
			long[g] = st
			mu.Unlock()
		}
		return quicCall(st, method, req, resp, false)
	})
}

// quicCall sends one request on st and reads its response into resp;
// last ends the stream (quic: one stream per call) and reads its end.
func quicCall(st *quic.Stream, method byte, req []byte, resp *RawMsg, last bool) error {
	var hdr [5]byte
	hdr[0] = method
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(req)))
	if _, err := st.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := st.Write(req); err != nil {
		return err
	}
	if last {
		if err := st.Close(); err != nil { // our FIN: the request is whole
			return err
		}
	}
	if _, err := io.ReadFull(st, hdr[:4]); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint32(hdr[:4]))
	if cap(resp.B) < n {
		resp.B = make([]byte, n)
	}
	resp.B = resp.B[:n]
	if _, err := io.ReadFull(st, resp.B); err != nil {
		return err
	}
	if last { // the server's FIN, so that the stream is done on both sides
		if _, err := st.Read(hdr[:1]); !errors.Is(err, io.EOF) {
			return fmt.Errorf("quic: no end of stream after the response (%v)", err)
		}
	}
	return nil
}

// Handshake opens a fresh connection and times it to the first call's
// answer, on a stream of its own (Handshaker).
func (c *quicClient) Handshake(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	conn, err := quic.DialAddr(ctx, c.addr, c.tlsCfg, quicConfig())
	if err != nil {
		return 0, err
	}
	defer conn.CloseWithError(0, "")
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return 0, err
	}
	var resp RawMsg
	err = quicCall(st, quicEcho, handshakeReq, &resp, true)
	return time.Since(t0), err
}
