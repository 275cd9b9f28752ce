package etcdresolver

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/erpc-go/erpc/resolver"
)

// entry is a key's value in its JSON form.
type entry struct {
	Addr   string            `json:"addr"`
	Weight uint32            `json:"weight"`
	Zone   string            `json:"zone"`
	Attrs  map[string]string `json:"attrs"`
}

// parseValue reads one key's value: an address ("10.0.0.1:31850"), or a
// JSON object {"addr": ..., "weight": ..., "zone": ..., "attrs": {...}}.
// The address is what erpc.Dial takes: host:port, or a target with a
// transport scheme (udp://, shm://, mem://).
func parseValue(key string, value []byte) (resolver.Address, error) {
	v := strings.TrimSpace(string(value))
	var e entry
	if strings.HasPrefix(v, "{") {
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			return resolver.Address{}, fmt.Errorf("etcdresolver: key %q: value is not the JSON form: %v", key, err)
		}
	} else {
		e.Addr = v
	}
	if err := checkAddr(e.Addr); err != nil {
		return resolver.Address{}, fmt.Errorf("etcdresolver: key %q: address %q: %v", key, e.Addr, err)
	}
	return resolver.Address{Addr: e.Addr, Weight: e.Weight, Zone: e.Zone, Attrs: e.Attrs}, nil
}

func checkAddr(addr string) error {
	if addr == "" {
		return fmt.Errorf("empty")
	}
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		switch scheme {
		case "udp", "shm", "mem":
			if rest == "" {
				return fmt.Errorf("names nothing after the scheme")
			}
			return nil
		}
		return fmt.Errorf("scheme %q is not a transport erpc.Dial takes", scheme)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" || port == "" {
		return fmt.Errorf("not host:port")
	}
	return nil
}
