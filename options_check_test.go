package erpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestOptionRanges: every numeric option's value out of its range fails
// Listen (and Server.Listen, and Dial, which open an endpoint) with
// InvalidArgument naming the option, instead of being quietly replaced;
// the values at its bounds open the endpoint.
func TestOptionRanges(t *testing.T) {
	const big = 1 << 40
	tests := []struct {
		name     string
		opt      func(int64) erpc.Option
		bad, ok  []int64
		inMsgBad string
	}{
		{"WithPaths", func(v int64) erpc.Option { return erpc.WithPaths(int(v)) }, []int64{-3, -1, 65, 100}, []int64{0, 1, 64}, "1 to 64"},
		{"WithWindow", func(v int64) erpc.Option { return erpc.WithWindow(int(v)) }, []int64{-1, 1<<15 + 1}, []int64{0, 1, 1 << 15}, "1 to 32768"},
		{"WithCredits", func(v int64) erpc.Option { return erpc.WithCredits(int(v)) }, []int64{-1, 1<<15 + 1}, []int64{0, 1, 1 << 15}, "1 to 32768"},
		{"WithMaxMessageSize", func(v int64) erpc.Option { return erpc.WithMaxMessageSize(int(v)) }, []int64{-5, -1, 1 << 32, big}, []int64{0, 1, 1<<32 - 1}, "1 to 4294967295"},
		{"WithMaxPacketSize", func(v int64) erpc.Option { return erpc.WithMaxPacketSize(int(v)) }, []int64{-1, 10, 40, 103, 40 + 0xFFFF + 1}, []int64{0, 104, 40 + 0xFFFF}, "104 to 65575"},
		{"WithMaxHeldRequests", func(v int64) erpc.Option { return erpc.WithMaxHeldRequests(int(v)) }, []int64{-1}, []int64{0, 1}, "not negative"},
		{"WithMaxHeldBytes", func(v int64) erpc.Option { return erpc.WithMaxHeldBytes(int(v)) }, []int64{-1}, []int64{0, 1}, "not negative"},
		{"WithWorkers", func(v int64) erpc.Option { return erpc.WithWorkers(int(v)) }, []int64{-1}, []int64{0, 1}, "not negative"},
		{"WithQueueDepth", func(v int64) erpc.Option { return erpc.WithQueueDepth(int(v)) }, []int64{-1}, []int64{0, 1}, "not negative"},
		{"WithSocketBuffer", func(v int64) erpc.Option { return erpc.WithSocketBuffer(int(v)) }, []int64{-1}, []int64{0, 1}, "not negative"},
		{"WithFailureTimeout", func(v int64) erpc.Option { return erpc.WithFailureTimeout(time.Duration(v)) }, []int64{-int64(time.Second), -1}, []int64{0, 1, big}, "not negative"},
		{"WithKeepalive interval", func(v int64) erpc.Option { return erpc.WithKeepalive(time.Duration(v), 0) }, []int64{-1}, []int64{0, int64(time.Second)}, "not negative"},
		{"WithKeepalive idle", func(v int64) erpc.Option { return erpc.WithKeepalive(0, time.Duration(v)) }, []int64{-1}, []int64{0, int64(time.Minute)}, "not negative"},
		{"WithSLO target", func(v int64) erpc.Option { return erpc.WithSLO(time.Duration(v), 0) }, []int64{-1}, []int64{0, int64(time.Millisecond)}, "not negative"},
		{"WithSLO meanService", func(v int64) erpc.Option { return erpc.WithSLO(time.Millisecond, time.Duration(v)) }, []int64{-1}, []int64{0, int64(time.Microsecond)}, "not negative"},
		{"WithDispatch", func(v int64) erpc.Option { return erpc.WithDispatch(erpc.Dispatch(v)) }, []int64{-1, 2}, []int64{0, 1}, "DispatchShared or DispatchHash"},
	}
	srv := erpc.NewServer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range tests {
		for _, v := range tt.bad {
			_, lerr := erpc.Listen("mem://", tt.opt(v))
			_, serr := srv.Listen(fmt.Sprintf("mem://opts-%d", time.Now().UnixNano()), tt.opt(v))
			_, derr := erpc.Dial(ctx, "mem://opts-nowhere", tt.opt(v))
			for what, err := range map[string]error{"Listen": lerr, "Server.Listen": serr, "Dial": derr} {
				if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.inMsgBad) {
					t.Errorf("%s with %s(%d): %v; want InvalidArgument naming %s and %q", what, tt.name, v, err, tt.name, tt.inMsgBad)
				}
			}
		}
		for _, v := range tt.ok {
			ep, err := erpc.Listen("mem://", tt.opt(v))
			if err != nil {
				t.Errorf("Listen with %s(%d): %v", tt.name, v, err)
				continue
			}
			ep.Close()
		}
	}
}
