package raft

import (
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

// FuzzCodec: every decoder takes bytes from the network. Any input either
// fails with an error or decodes into a value that encodes and decodes back
// to the same value; none panics.
func FuzzCodec(f *testing.F) {
	for i, c := range codecCases {
		v := reflect.New(c.typ)
		if c.typ == reflect.TypeFor[raft.AppendEntriesRequest]() {
			v.Interface().(*raft.AppendEntriesRequest).Entries = []*raft.Log{{Index: 1, Data: []byte("x")}}
		}
		f.Add(uint8(i), c.enc(v.Interface()))
	}
	f.Add(uint8(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecCases[int(which)%len(codecCases)]
		got, err := c.dec(b)
		if err != nil {
			return
		}
		again, err := c.dec(c.enc(got))
		if err != nil {
			t.Fatalf("%s: re-encoding a decoded value does not decode: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("%s: decode(encode(v)) != v:\n%+v\n%+v", c.name, got, again)
		}
	})
}
