package main

import (
	"net"
	"sync"
	"time"
)

// Shared by the TCP-based peers (grpc, netrpc, drpc): a raw-bytes message,
// and a client that runs conc goroutines each making blocking calls, the
// way those libraries are meant to be used.

// rawMsg is a message that is only bytes: the codecs pass them through,
// so no serialization cost is measured.
type rawMsg struct{ b []byte }

// sink32 is the 32-byte response of bandwidth runs.
var sink32 = make([]byte, 32)

// listenTCP opens a loopback listener.
func listenTCP() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") }

// callFunc makes one blocking call on worker g's connection.
type callFunc func(g int, req []byte, resp *rawMsg) error

// runGoroutines measures conc goroutines calling call in a loop.
func runGoroutines(p point, m *meter, call callFunc) error {
	var wg sync.WaitGroup
	for g := range p.conc {
		rec := m.recorder()
		req := payload(p.size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp rawMsg
			for !m.stopped() {
				t0 := time.Now()
				err := call(g, req, &resp)
				if err == nil && len(resp.b) != p.resp {
					err = errShortResponse
				}
				rec.done(m, t0, err)
			}
		}()
	}
	wg.Wait()
	return nil
}
