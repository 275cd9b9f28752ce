package etcdresolver

import (
	"testing"

	"github.com/erpc-go/erpc/resolver"
)

func TestParseValue(t *testing.T) {
	good := map[string]resolver.Address{
		"10.0.0.1:31850":     {Addr: "10.0.0.1:31850"},
		" [fd00::1]:31850\n": {Addr: "[fd00::1]:31850"},
		"db.internal:31850":  {Addr: "db.internal:31850"},
		"shm:///run/x.sock":  {Addr: "shm:///run/x.sock"},
		`{"addr":"10.0.0.1:1","weight":5,"zone":"eu-1a","attrs":{"v":"2"}}`: {Addr: "10.0.0.1:1", Weight: 5, Zone: "eu-1a", Attrs: map[string]string{"v": "2"}},
	}
	for v, want := range good {
		got, err := parseValue("k", []byte(v))
		if err != nil || !resolver.Equal([]resolver.Address{got}, []resolver.Address{want}) {
			t.Errorf("%q: %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "10.0.0.1", ":80", "http://x:1", "udp://", `{"addr":1}`, `{"weight":1}`, `{bad`} {
		if _, err := parseValue("k", []byte(v)); err == nil {
			t.Errorf("%q: accepted", v)
		}
	}
}
