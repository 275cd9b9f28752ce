package main

import (
	"strings"
	"testing"
)

func TestUDPFloorCheck(t *testing.T) {
	for _, p := range []point{{size: 32, resp: 32, conc: 1}, {size: 0, resp: 0, conc: 1},
		{size: 65507, resp: 32, conc: 1}, {size: 4, resp: 4, conc: 64}} {
		if err := udpFloorCheck(p); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	for p, want := range map[point]string{
		{size: 65508, resp: 32, conc: 1}: "does not fit one datagram",
		{size: 32, resp: 65508, conc: 1}: "does not fit one datagram",
		{size: 2, resp: 32, conc: 2}:     "-c 2 needs",
	} {
		if err := udpFloorCheck(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one saying %q", p, err, want)
		}
	}
}
