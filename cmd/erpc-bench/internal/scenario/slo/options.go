package slo

import (
	"fmt"
	"time"

	"github.com/erpc-go/erpc"
)

// sloServerOptions are the erpc server's options for a policy: a fixed
// pool of workers fed from one shared queue (jbsq: any idle worker takes
// the oldest waiting request) or from a queue per worker that each
// session's requests always go to (hash: eRPC's behaviour); with sloQueue,
// the queue bounded by the SLO (an admitted request can still meet it; the
// rest are refused at once with ResourceExhausted), otherwise a deep one.
// svc is the mean service time, or 0 for the server to measure it.
func sloServerOptions(policy string, workers int, slo, svc time.Duration, sloQueue bool) ([]erpc.Option, error) {
	var d erpc.Dispatch
	switch policy {
	case "inline":
		return nil, nil
	case "jbsq":
		d = erpc.DispatchShared
	case "hash":
		d = erpc.DispatchHash
	default:
		return nil, fmt.Errorf("unknown policy %q", policy)
	}
	o := []erpc.Option{erpc.WithWorkers(workers), erpc.WithDispatch(d)}
	if sloQueue {
		o = append(o, erpc.WithSLO(slo, svc))
	} else {
		o = append(o, erpc.WithQueueDepth(sloDeepQueue))
	}
	return o, nil
}
