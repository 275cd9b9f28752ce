package systems

import (
	"net"
	"sync"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// Shared by the TCP-based peers (grpc, netrpc, drpc): a raw-bytes message,
// and a client that runs conc goroutines each making blocking calls, the
// way those libraries are meant to be used.

// RawMsg is a message that is only bytes: the codecs pass them through,
// so no serialization cost is measured.
type RawMsg struct{ B []byte }

// sink32 is the 32-byte response of bandwidth runs.
var sink32 = make([]byte, 32)

// ListenTCP opens a loopback listener.
func ListenTCP() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") }

// callFunc makes one blocking call on worker g's connection.
type callFunc func(g int, req []byte, resp *RawMsg) error

// runGoroutines measures conc goroutines calling call in a loop.
func runGoroutines(p meter.Point, m *meter.Meter, call callFunc) error {
	var wg sync.WaitGroup
	for g := range p.Conc {
		rec := m.Recorder()
		req := meter.Payload(p.Size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp RawMsg
			for !m.Stopped() {
				t0 := time.Now()
				err := call(g, req, &resp)
				if err == nil && len(resp.B) != p.Resp {
					err = meter.ErrShortResponse
				}
				rec.Done(m, t0, err)
			}
		}()
	}
	wg.Wait()
	return nil
}
