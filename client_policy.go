package erpc

import (
	"math/rand/v2"
	"time"

	"github.com/erpc-go/erpc/balancer"
)

// Fleet policy settings, variables so tests can shorten them.
var (
	// outlierConfig is a Client's ejection policy (balancer.Outlier's
	// defaults: 5 failures in a row eject for 1 s, doubling to 30 s).
	outlierConfig = balancer.OutlierConfig{}
	// redial is the backoff between a replica's dials after failures
	// (full jitter from 50 ms doubling to 5 s).
	redial = balancer.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second}
	// drainRedial is how long a replica whose server is draining waits
	// before it is dialed again (if the resolver still lists it).
	drainRedial = time.Second
	// sweepEvery is how often the latency outlier check runs.
	sweepEvery = time.Second
	// retryBudgetConfig is a Client's retry budget (balancer.RetryBudget's
	// defaults: a tenth of the calls, plus 10 a second, over 10 s).
	retryBudgetConfig = balancer.RetryBudgetConfig{}
)

// connectBurst is the connects a Client starts at once: a tenth of a
// second's worth, at least one.
func connectBurst(perSecond float64) int { return max(1, int(perSecond/10)) }

// retryDelay is the pause before retry n (1, 2, ...) of a call that may
// have run: 10 ms doubling, jittered ±50 %, at most 1 s.
func retryDelay(n int) time.Duration {
	d := min(10*time.Millisecond<<min(n-1, 10), time.Second)
	return d/2 + rand.N(d)
}
