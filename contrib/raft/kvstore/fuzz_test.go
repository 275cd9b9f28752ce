package kvstore

import (
	"bytes"
	"testing"
)

// FuzzDecode: commands come from clients over the network and results
// from replicas. Any input fails with errCorrupt or decodes into a value
// that encodes back to a decodable equal value; none panics.
func FuzzDecode(f *testing.F) {
	f.Add((&Command{Op: OpPut, Client: 7, Seq: 9, Key: []byte("k"), Value: []byte("v")}).appendTo(nil))
	f.Add(appendResult(nil, Result{Found: true, Value: []byte("v")}))
	f.Add([]byte{byte(OpPut), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Command
		if err := c.decode(b); err == nil {
			var again Command
			if err := again.decode(c.appendTo(nil)); err != nil {
				t.Fatalf("re-encoded command does not decode: %v", err)
			}
			if again.Op != c.Op || again.Client != c.Client || again.Seq != c.Seq ||
				!bytes.Equal(again.Key, c.Key) || !bytes.Equal(again.Value, c.Value) {
				t.Fatalf("command changed: %+v -> %+v", c, again)
			}
		}
		if r, err := decodeResult(b); err == nil {
			again, err := decodeResult(appendResult(nil, r))
			if err != nil || again.Found != r.Found || !bytes.Equal(again.Value, r.Value) {
				t.Fatalf("result changed: %+v -> %+v (%v)", r, again, err)
			}
		}
	})
}
