package balancer

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff is the wait between a session's reconnect attempts: exponential
// with full jitter, a uniform draw in [0, min(Max, Base×2^attempt)), so
// sessions that lost their server together spread their retries over the
// whole window instead of hitting it in waves. Zero fields take the
// defaults: Base 100 ms, Max 10 s. (gRPC's connection backoff, the
// reference, starts at 1 s and grows ×1.6 with ±20 % jitter to 120 s, with
// a 20 s minimum connect timeout; erpc reconnects sooner because its
// sessions are cheap to set up and the ConnectLimiter, not the backoff,
// bounds the fleet-wide connect rate.)
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Delay is the wait before reconnect attempt n (0 for the first after a
// failure), drawn from rnd (nil: math/rand/v2's).
func (b Backoff) Delay(attempt int, rnd *rand.Rand) time.Duration {
	base, ceil := b.Base, b.Max
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if ceil <= 0 {
		ceil = 10 * time.Second
	}
	window := base
	for i := 0; i < attempt && window < ceil; i++ {
		window *= 2
	}
	window = min(window, ceil)
	return time.Duration(randFloat(rnd) * float64(window))
}

// Next is when attempt n may start, the last having failed at now.
func (b Backoff) Next(now time.Time, attempt int, rnd *rand.Rand) time.Time {
	return now.Add(b.Delay(attempt, rnd))
}

// ConnectLimiter bounds the connects a whole client starts: a token bucket
// refilled at a steady rate and holding at most a burst. When a server
// restarts under hundreds of sessions, each reserves a slot and waits for
// it, so connects arrive at the configured rate however many sessions
// failed at once. It is safe for concurrent use (a mutex: connects are
// rare) and takes the time from its caller.
type ConnectLimiter struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64 // negative when slots are reserved ahead
	last   time.Time
}

// NewConnectLimiter allows perSecond connects a second on average and
// burst at once (both at least 1); the bucket starts full.
func NewConnectLimiter(perSecond float64, burst int) *ConnectLimiter {
	perSecond = max(perSecond, 1)
	b := float64(max(burst, 1))
	return &ConnectLimiter{rate: perSecond, burst: b, tokens: b}
}

func (l *ConnectLimiter) refill(now time.Time) {
	if l.last.IsZero() {
		l.last = now
	}
	if el := now.Sub(l.last); el > 0 {
		l.tokens = min(l.burst, l.tokens+el.Seconds()*l.rate)
		l.last = now
	}
}

// Allow takes a slot if one is free now.
func (l *ConnectLimiter) Allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// Reserve takes the next slot and returns how long after now the connect
// may start (0 when a slot is free now). The slot is the caller's: it
// must wait and then connect, not ask again.
func (l *ConnectLimiter) Reserve(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	// The bucket's state is as of l.last, which a caller with an older
	// clock reading may not have reached yet.
	start := l.last.Add(time.Duration(-l.tokens / l.rate * float64(time.Second)))
	return max(0, start.Sub(now))
}

// AgeJitter is a session's lifetime: maxAge scaled by a uniform draw in
// [1-jitter, 1+jitter] (jitter a fraction, e.g. 0.1), from rnd (nil:
// math/rand/v2's). Sessions opened together then age out spread over a
// window, not at one instant, and each reconnect lets the balancer place
// the session anew, so replicas added since get their share (gRPC's
// MaxConnectionAge, ±10 % jitter, does the same from the server side).
// Zero or negative maxAge means no aging (0).
func AgeJitter(maxAge time.Duration, jitter float64, rnd *rand.Rand) time.Duration {
	if maxAge <= 0 {
		return 0
	}
	jitter = min(max(jitter, 0), 1)
	return time.Duration(float64(maxAge) * (1 + jitter*(2*randFloat(rnd)-1)))
}
