package wire

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// parseResp parses a response's metadata into maps, keeping each block's
// key order.
func parseResp(msg []byte) (hk []string, h map[string][]string, tk []string, tr map[string][]string, rest []byte, err error) {
	h, tr = map[string][]string{}, map[string][]string{}
	collect := func(keys *[]string, m map[string][]string) func(string, []string) {
		return func(k string, vs []string) {
			if _, ok := m[k]; !ok {
				*keys = append(*keys, k)
			}
			m[k] = append(m[k], vs...)
		}
	}
	rest, err = ParseResponseMetadata(msg, collect(&hk, h), collect(&tk, tr))
	return
}

// FuzzParseResponseMetadata: a response's metadata from any server either
// fails to parse or parses into headers and trailers that survive a
// re-encoding unchanged, never into more than MaxMetadata bytes of blocks.
func FuzzParseResponseMetadata(f *testing.F) {
	h := map[string][]string{"x-id": {"7"}, "bin-bin": {"\x00\xff"}}
	tr := map[string][]string{"cost": {"1", "2"}}
	f.Add(append(AppendResponseMetadata(nil, []string{"bin-bin", "x-id"}, h, []string{"cost"}, tr), "message"...))
	f.Add(AppendResponseMetadata(nil, nil, nil, nil, nil))
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 0, 3, 1, 1})
	f.Fuzz(func(t *testing.T, msg []byte) {
		hk, h, tk, tr, rest, err := parseResp(msg)
		if err != nil {
			if !errors.Is(err, ErrMetadata) && !errors.Is(err, ErrMetadataTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(msg)-len(rest) > MaxMetadata {
			t.Fatalf("parsed %d bytes of blocks, over the bound", len(msg)-len(rest))
		}
		re := append(AppendResponseMetadata(nil, hk, h, tk, tr), rest...)
		hk2, h2, tk2, tr2, rest2, err := parseResp(re)
		if err != nil || string(rest2) != string(rest) || !slices.Equal(hk, hk2) || !slices.Equal(tk, tk2) {
			t.Fatalf("re-encoded metadata does not parse back: %v", err)
		}
		for _, pair := range [][2]map[string][]string{{h, h2}, {tr, tr2}} {
			for k, vs := range pair[0] {
				if !slices.Equal(vs, pair[1][k]) {
					t.Fatalf("key %q: %q then %q", k, vs, pair[1][k])
				}
			}
		}
	})
}

// TestResponseMetadataBound: blocks of exactly MaxMetadata bytes together
// parse; one byte more fails with ErrMetadataTooLarge, wherever the byte
// is (header block or trailer block); truncated blocks fail with
// ErrMetadata.
func TestResponseMetadataBound(t *testing.T) {
	fill := func(total int, inHeader bool) []byte {
		// One key whose value fills the room the rest leaves.
		for v := total; v > 0; v-- {
			big := map[string][]string{"k": {strings.Repeat("v", v)}}
			var b []byte
			if inHeader {
				b = AppendResponseMetadata(nil, []string{"k"}, big, nil, nil)
			} else {
				b = AppendResponseMetadata(nil, nil, nil, []string{"k"}, big)
			}
			if len(b) == total {
				return b
			}
		}
		t.Fatalf("no block of %d bytes", total)
		return nil
	}
	for _, inHeader := range []bool{true, false} {
		at := fill(MaxMetadata, inHeader)
		if rest, err := ParseResponseMetadata(append(at, "msg"...), func(string, []string) {}, func(string, []string) {}); err != nil || string(rest) != "msg" {
			t.Fatalf("header %v: %d bytes of blocks: %v, rest %q", inHeader, len(at), err, rest)
		}
		over := fill(MaxMetadata+1, inHeader)
		if _, err := ParseResponseMetadata(over, func(string, []string) {}, func(string, []string) {}); !errors.Is(err, ErrMetadataTooLarge) {
			t.Fatalf("header %v: %d bytes of blocks: %v, want ErrMetadataTooLarge", inHeader, len(over), err)
		}
		for cut := 0; cut < 8; cut++ {
			if _, err := ParseResponseMetadata(at[:cut], func(string, []string) {}, func(string, []string) {}); !errors.Is(err, ErrMetadata) {
				t.Fatalf("header %v: truncated to %d bytes: %v, want ErrMetadata", inHeader, cut, err)
			}
		}
	}
	// Two blocks each under the bound, together over it.
	half := map[string][]string{"k": {strings.Repeat("v", MaxMetadata/2)}}
	both := AppendResponseMetadata(nil, []string{"k"}, half, []string{"k"}, half)
	if _, err := ParseResponseMetadata(both, func(string, []string) {}, func(string, []string) {}); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("%d bytes of blocks in two halves: %v, want ErrMetadataTooLarge", len(both), err)
	}
}

// TestBlockSize: BlockSize and ResponseMetadataSize are the lengths the
// appenders write, across varint boundaries.
func TestBlockSize(t *testing.T) {
	for _, n := range []int{0, 1, 126, 127, 128, 16383, 16384, 70000} {
		md := map[string][]string{"a": {strings.Repeat("x", n)}, "b": {"", "y"}}
		keys := []string{"a", "b"}
		if got, want := BlockSize(keys, md), len(AppendMetadata(nil, keys, md)); got != want {
			t.Fatalf("value of %d bytes: BlockSize %d, block %d", n, got, want)
		}
		if got, want := ResponseMetadataSize(keys, md, nil, nil), len(AppendResponseMetadata(nil, keys, md, nil, nil)); got != want {
			t.Fatalf("value of %d bytes: ResponseMetadataSize %d, blocks %d", n, got, want)
		}
	}
}
