package erpc_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// benchStreamPair serves a "Flood" stream handler on UDP loopback: it
// sends the count of messages of the size the client's first message
// says, then returns.
func benchStreamPair(b *testing.B) *erpc.Session {
	b.Helper()
	srv := erpc.NewServer()
	if err := srv.HandleStream("Flood", func(s erpc.ServerStream) error {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		n, size := int(req[0])|int(req[1])<<8|int(req[2])<<16|int(req[3])<<24, int(req[4])|int(req[5])<<8|int(req[6])<<16
		msg := make([]byte, size)
		for range n {
			if err := s.Send(msg); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	sep, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sep.Close() })
	// The client listens on loopback too, so that both ends use its
	// 64 KiB datagrams (as TCP loopback does for gRPC).
	cep, err := erpc.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cep.Close() })
	s, err := cep.Dial(context.Background(), sep.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func floodRequest(n, size int) []byte {
	return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), byte(size), byte(size >> 8), byte(size >> 16)}
}

// recvAll opens a Flood stream of n messages of size bytes and reads them.
func recvAll(b *testing.B, s *erpc.Session, n, size int) {
	st, err := s.NewStream(context.Background(), "Flood")
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Send(floodRequest(n, size)); err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		b.Fatal(err)
	}
}

// BenchmarkStreamServer32B: one server stream's rate of 32-byte messages.
func BenchmarkStreamServer32B(b *testing.B) {
	s := benchStreamPair(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	recvAll(b, s, b.N, 32)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStreamServer64KiB: one server stream's bulk rate.
func BenchmarkStreamServer64KiB(b *testing.B) {
	s := benchStreamPair(b)
	b.ReportAllocs()
	b.SetBytes(64 << 10)
	b.ResetTimer()
	start := time.Now()
	recvAll(b, s, b.N, 64<<10)
	b.ReportMetric(float64(b.N)*64*1024*8/time.Since(start).Seconds()/1e9, "Gb/s")
}

// BenchmarkStreamBesideSlowReader: the 32-byte rate of one stream while
// another stream on the same session has a reader that never reads (its
// handler blocked on credit). Compare with BenchmarkStreamServer32B.
func BenchmarkStreamBesideSlowReader(b *testing.B) {
	s := benchStreamPair(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := s.NewStream(ctx, "Flood", erpc.StreamWindow(64, 1<<20))
	if err != nil {
		b.Fatal(err)
	}
	if err := slow.Send(floodRequest(1<<30, 32)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	recvAll(b, s, b.N, 32)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStream16x32B: 16 server streams on one session at once, 32-byte
// messages; msgs/s is their sum.
func BenchmarkStream16x32B(b *testing.B) {
	s := benchStreamPair(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	per := b.N/16 + 1
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { recvAll(b, s, per, 32) })
	}
	wg.Wait()
	b.ReportMetric(float64(per*16)/time.Since(start).Seconds(), "msgs/s")
}
