package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// recvFunc takes one message of a flood stream, or makes one round trip
// on an echo stream, and returns the length of the message received.
type recvFunc func() (int, error)

// client is one system's client side: streams on one session
// (connection) to its server.
type client interface {
	// flood opens a Flood stream asking for messages like msg.
	flood(ctx context.Context, msg []byte) (recvFunc, error)
	// echo opens an Echo stream that round-trips msg.
	echo(ctx context.Context, msg []byte) (recvFunc, error)
	Close()
}

// slowEvery is the pace of the slow consumer's reader.
const slowEvery = time.Millisecond

// paddedCount is one stream's message count, alone on its cache line.
type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

// firstErr keeps the first error of a point's goroutines.
type firstErr struct {
	mu  sync.Mutex
	err error
}

func (f *firstErr) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *firstErr) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// firstWait bounds the wait for a stream's first message.
const firstWait = 10 * time.Second

// measureRate opens n flood streams of size-byte messages (and, with
// slow, first a stream read one message per slowEvery) and returns the
// messages the n streams received in dur after warmup, which starts once
// every stream has had its first message: the rate is a steady state's,
// not a stream's start (a loaded host under -race took 150 ms to bring
// the first message of a stream opened beside a slow one).
func measureRate(c client, size, n int, slow bool, warmup, dur time.Duration) (int64, float64, error) {
	defer meter.Watchdog(fmt.Sprintf("stream rate %dB x%d", size, n), warmup+dur+60*time.Second)()
	ctx, cancel := context.WithCancel(context.Background())
	msg := meter.Payload(size)
	var wg sync.WaitGroup
	var bad firstErr
	defer func() { cancel(); wg.Wait() }()
	var slowGot atomic.Int64
	if slow {
		recv, err := c.flood(ctx, msg)
		if err != nil {
			return 0, 0, fmt.Errorf("opening the slow stream: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := recv(); err != nil {
					return
				}
				slowGot.Add(1)
				time.Sleep(slowEvery)
			}
		}()
	}
	counts := make([]paddedCount, n)
	for i := range n {
		recv, err := c.flood(ctx, msg)
		if err != nil {
			return 0, 0, fmt.Errorf("opening stream %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, err := recv()
				if err == nil && k != size {
					err = meter.ErrShortResponse
				}
				if err != nil {
					if ctx.Err() == nil {
						bad.set(err)
					}
					return
				}
				counts[i].n.Add(1)
			}
		}()
	}
	sum := func() (s int64) {
		for i := range counts {
			s += counts[i].n.Load()
		}
		return s
	}
	started := func() bool {
		for i := range counts {
			if counts[i].n.Load() == 0 {
				return false
			}
		}
		return !slow || slowGot.Load() > 0
	}
	for end := time.Now().Add(firstWait); !started(); time.Sleep(time.Millisecond) {
		if err := bad.get(); err != nil {
			return 0, 0, err
		}
		if time.Now().After(end) {
			return 0, 0, fmt.Errorf("a stream had no message within %v of its start", firstWait)
		}
	}
	time.Sleep(warmup)
	s0, t0 := sum(), time.Now()
	time.Sleep(dur)
	s1, t1 := sum(), time.Now()
	cancel()
	return s1 - s0, t1.Sub(t0).Seconds(), bad.get()
}

// measurePing runs n echo streams at once, one size-byte message in
// flight on each, and returns the round trips completed in dur after
// warmup.
func measurePing(c client, size, n int, warmup, dur time.Duration) (meter.Hist, error) {
	defer meter.Watchdog(fmt.Sprintf("stream ping-pong %dB x%d", size, n), warmup+dur+60*time.Second)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg := meter.Payload(size)
	var phase atomic.Int32 // meter's phases
	var wg sync.WaitGroup
	var bad firstErr
	hists := make([]meter.Hist, n)
	for i := range n {
		rt, err := c.echo(ctx, msg)
		if err != nil {
			cancel()
			wg.Wait()
			return meter.Hist{}, fmt.Errorf("opening echo stream %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for phase.Load() != meter.PhaseStop {
				t0 := time.Now()
				k, err := rt()
				if err == nil && k != size {
					err = meter.ErrShortResponse
				}
				if err != nil {
					if ctx.Err() == nil {
						bad.set(err)
					}
					return
				}
				if phase.Load() == meter.PhaseMeasure {
					hists[i].Record(time.Since(t0))
				}
			}
		}()
	}
	time.Sleep(warmup)
	phase.Store(meter.PhaseMeasure)
	time.Sleep(dur)
	phase.Store(meter.PhaseStop)
	cancel()
	wg.Wait()
	var h meter.Hist
	for i := range hists {
		h.Merge(&hists[i])
	}
	return h, bad.err
}
