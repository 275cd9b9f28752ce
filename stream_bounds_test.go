package erpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// limitsPair: a server endpoint with srvMax, a client with cliMax (0:
// default), and a session between them.
func limitsPair(t *testing.T, srv *erpc.Server, srvMax, cliMax int) *erpc.Session {
	n := newMemNet()
	var so, co []erpc.Option
	if srvMax > 0 {
		so = append(so, erpc.WithMaxMessageSize(srvMax))
	}
	if cliMax > 0 {
		co = append(co, erpc.WithMaxMessageSize(cliMax))
	}
	sep := n.Listen(t, srv, so...)
	cli := n.Listen(t, nil, co...)
	return dialT(t, n, cli, sep)
}

// TestStreamBigEndSparesNeighbour: at a 1 KiB session limit (the
// client's), one stream's handler ends with a 1.5 KB status message;
// another stream on the same session is mid-echo. The status is cut to
// the limit and keeps its code, and the neighbour goes on (before, the
// End frame's batch went over the limit and every stream in it failed
// with Internal).
func TestStreamBigEndSparesNeighbour(t *testing.T) {
	srv := echoStreamServer(t)
	release := make(chan struct{})
	must(t, srv.HandleStream("Big", func(s erpc.ServerStream) error {
		<-release
		return erpc.Errorf(erpc.NotFound, "%s", strings.Repeat("e", 1500))
	}))
	sess := limitsPair(t, srv, 0, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	echo, err := sess.NewStream(ctx, "Echo")
	if err != nil {
		t.Fatal(err)
	}
	big, err := sess.NewStream(ctx, "Big")
	if err != nil {
		t.Fatal(err)
	}
	big.CloseSend()
	if err := echo.Send([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := echo.Recv(); err != nil {
		t.Fatal(err)
	}
	// the echo's next answer and Big's end may share a batch
	if err := echo.Send([]byte("b")); err != nil {
		t.Fatal(err)
	}
	close(release)
	_, bigErr := big.Recv()
	m, echoErr := echo.Recv()
	t.Logf("Big: %v", bigErr)
	t.Logf("Echo: %q %v", m, echoErr)
	if erpc.CodeOf(bigErr) != erpc.NotFound {
		t.Errorf("Big's status lost: got code %v", erpc.CodeOf(bigErr))
	}
	if echoErr != nil {
		t.Errorf("neighbour stream failed: %v", echoErr)
	}
	if err := echo.Send([]byte("c")); err != nil {
		t.Errorf("neighbour Send after: %v", err)
	} else if _, err := echo.Recv(); err != nil {
		t.Errorf("neighbour Recv after: %v", err)
	}
}

// TestStreamHeaderAndTrailersOverLimit: at a 512-byte session limit (on
// either end), SetHeader and SendHeader refuse a 700-byte header with
// InvalidArgument naming its size, and the stream goes on; trailers too
// large for an End frame (600 bytes) turn the stream's end into Internal naming
// them, rather than failing the session's batch.
func TestStreamHeaderAndTrailersOverLimit(t *testing.T) {
	for _, lim := range [][2]int{{0, 512}, {512, 0}} {
		srv := streamServer(t, "Hdr", func(s erpc.ServerStream) error {
			big := erpc.Pairs("k", strings.Repeat("h", 700))
			if err := s.SetHeader(big); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "header of") {
				return erpc.Errorf(erpc.Aborted, "SetHeader of 700 bytes: %v", err)
			}
			if err := s.SendHeader(big); erpc.CodeOf(err) != erpc.InvalidArgument {
				return erpc.Errorf(erpc.Aborted, "SendHeader of 700 bytes: %v", err)
			}
			if err := s.Send([]byte("hi")); err != nil {
				return err
			}
			s.SetTrailer(erpc.Pairs("t", strings.Repeat("t", 600)))
			return nil
		})
		sess := limitsPair(t, srv, lim[0], lim[1])
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := sess.NewStream(ctx, "Hdr")
		if err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
		if m, err := st.Recv(); err != nil || string(m) != "hi" {
			t.Fatalf("limits %v: first message: %q %v", lim, m, err)
		}
		_, err = st.Recv()
		if erpc.CodeOf(err) != erpc.Internal || !strings.Contains(err.Error(), "trailers of") {
			t.Errorf("limits %v: the end with 600 bytes of trailers at 512: %v (code %v), want Internal naming the trailers", lim, err, erpc.CodeOf(err))
		}
		cancel()
	}
}
