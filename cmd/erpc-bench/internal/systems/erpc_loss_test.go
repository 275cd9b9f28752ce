package systems

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// TestErpcLoss: -loss drops packets on both endpoints of every erpc
// transport, and erpc recovers: every call completes, and the client
// retransmitted.
func TestErpcLoss(t *testing.T) {
	transports := []string{"udp", "memnet"}
	if runtime.GOOS == "linux" {
		transports = append(transports, "shm")
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const loss = 0.05
			srv, err := newErpcServer(proc.Config{System: "erpc", Transport: tr, Loss: loss})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cli, err := newErpcClient(srv.Addr(), tr, ErpcOptions(false, 0), loss, false)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := meter.Payload(32)
			for i := range 200 {
				resp, err := cli.sessions[0].Call(ctx, "Echo", req, nil)
				if err != nil || string(resp) != string(req) {
					t.Fatalf("call %d: %d bytes, %v", i, len(resp), err)
				}
			}
			if n := cli.Ep.Stats().Retransmits; n == 0 {
				t.Fatalf("200 calls through %v loss each way, and no retransmission", loss)
			}
		})
	}
}
