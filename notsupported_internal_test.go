package erpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/erpc-go/erpc/transport/shm"
	"github.com/erpc-go/erpc/transport/udp"
)

// TestOpenErrorNotSupported: a transport that cannot work on this platform
// or kernel (shm.ErrNotSupported, which shm's seal probe reports on Linux
// before 5.1; udp.ErrNotSupported) fails Listen and Dial with
// FailedPrecondition, still matching the transport's error; any other
// failure to open stays Unavailable.
func TestOpenErrorNotSupported(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Code
	}{
		{fmt.Errorf("%w: the kernel refuses F_SEAL_FUTURE_WRITE", shm.ErrNotSupported), FailedPrecondition},
		{fmt.Errorf("%w: several paths", udp.ErrNotSupported), FailedPrecondition},
		{errors.New("address already in use"), Unavailable},
	} {
		e := openError("shm:///x", c.err)
		if e.Code != c.want || !errors.Is(e, c.err) {
			t.Errorf("openError(%v) = %v; want %v wrapping it", c.err, e, c.want)
		}
	}
}
