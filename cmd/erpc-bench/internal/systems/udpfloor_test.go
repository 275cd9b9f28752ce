package systems

import (
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

func TestUDPFloorCheck(t *testing.T) {
	for _, p := range []meter.Point{{Size: 32, Resp: 32, Conc: 1}, {Size: 0, Resp: 0, Conc: 1},
		{Size: 65507, Resp: 32, Conc: 1}, {Size: 4, Resp: 4, Conc: 64}} {
		if err := udpFloorCheck(p); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	for p, want := range map[meter.Point]string{
		{Size: 65508, Resp: 32, Conc: 1}: "does not fit one datagram",
		{Size: 32, Resp: 65508, Conc: 1}: "does not fit one datagram",
		{Size: 2, Resp: 32, Conc: 2}:     "-c 2 needs",
	} {
		if err := udpFloorCheck(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one saying %q", p, err, want)
		}
	}
}
