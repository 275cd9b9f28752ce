package raft

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The codec must carry every field of every raft request and response. The
// structs are filled by reflection, so a field that a future raft release
// adds is filled too, and the round trip fails until the codec learns it.

// fill sets every field reachable from v to a random non-zero value.
func fill(t *testing.T, v reflect.Value, r *rand.Rand) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			// Unix nanoseconds in the Local location is what the wire keeps.
			v.Set(reflect.ValueOf(time.Unix(0, 1+r.Int64N(math.MaxInt64-1))))
			return
		}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s is unexported: the codec cannot carry it", v.Type(), v.Type().Field(i).Name)
			}
			fill(t, v.Field(i), r)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), r)
	case reflect.Slice:
		n := 1 + r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), r)
		}
		v.Set(s)
	case reflect.Uint8:
		v.SetUint(1 + r.Uint64N(math.MaxUint8))
	case reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(1 + r.Uint64N(1<<(v.Type().Bits()-1)))
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		x := 1 + r.Int64N(1<<(v.Type().Bits()-2))
		if r.IntN(2) == 0 {
			x = -x
		}
		v.SetInt(x)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("s")
	default:
		t.Fatalf("fill: %s of kind %s not handled", v.Type(), v.Kind())
	}
}

// nonZero fails if some field reachable from v is zero after fill: the
// filler would then be blind to it.
func nonZero(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	if v.IsZero() {
		t.Fatalf("%s is zero after fill", path)
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			nonZero(t, path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	case reflect.Pointer:
		nonZero(t, path, v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			nonZero(t, path+"[]", v.Index(i))
		}
	}
}

type codecCase struct {
	name string
	typ  reflect.Type
	enc  func(any) []byte
	dec  func([]byte) (any, error)
}

// codecFor adapts a pair of encode and decode functions to codecCase.
func codecFor[T any](name string, enc func([]byte, *T) []byte, dec func([]byte, *T) error) codecCase {
	return codecCase{
		name: name,
		typ:  reflect.TypeFor[T](),
		enc:  func(v any) []byte { return enc(nil, v.(*T)) },
		dec: func(b []byte) (any, error) {
			v := new(T)
			err := dec(b, v)
			return v, err
		},
	}
}

var codecCases = []codecCase{
	codecFor("AppendEntriesRequest", appendAppendEntriesRequest, decodeAppendEntriesRequest),
	codecFor("AppendEntriesResponse", appendAppendEntriesResponse, decodeAppendEntriesResponse),
	codecFor("RequestVoteRequest", appendRequestVoteRequest, decodeRequestVoteRequest),
	codecFor("RequestVoteResponse", appendRequestVoteResponse, decodeRequestVoteResponse),
	codecFor("RequestPreVoteRequest", appendRequestPreVoteRequest, decodeRequestPreVoteRequest),
	codecFor("RequestPreVoteResponse", appendRequestPreVoteResponse, decodeRequestPreVoteResponse),
	codecFor("TimeoutNowRequest", appendTimeoutNowRequest, decodeTimeoutNowRequest),
	codecFor("TimeoutNowResponse", appendTimeoutNowResponse, decodeTimeoutNowResponse),
	codecFor("InstallSnapshotRequest", appendInstallSnapshotRequest, func(b []byte, r *raft.InstallSnapshotRequest) error {
		d := dec{b: b}
		decodeInstallSnapshotRequest(&d, r)
		return d.err
	}),
	codecFor("InstallSnapshotResponse", appendInstallSnapshotResponse, func(b []byte, r *raft.InstallSnapshotResponse) error {
		d := dec{b: b}
		decodeInstallSnapshotResponse(&d, r)
		return d.err
	}),
}

func TestCodecCompleteness(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			for range 200 {
				v := reflect.New(c.typ)
				fill(t, v.Elem(), r)
				nonZero(t, c.name, v.Elem())
				got, err := c.dec(c.enc(v.Interface()))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, v.Interface()) {
					t.Fatalf("round trip\n got %#v\nwant %#v", got, v.Interface())
				}
			}
			// The zero value too: nil stays nil.
			zero := reflect.New(c.typ).Interface()
			got, err := c.dec(c.enc(zero))
			if err != nil || !reflect.DeepEqual(got, zero) {
				t.Fatalf("zero value: got %#v (%v)", got, err)
			}
		})
	}
}

// Empty but non-nil slices stay empty, not nil, and nil entries keep their
// slot (raft sends neither, but the codec should not change what it got).
func TestCodecEmptyVsNil(t *testing.T) {
	for _, req := range []*raft.AppendEntriesRequest{
		{Entries: []*raft.Log{}, Leader: []byte{}},
		{Entries: []*raft.Log{nil, {Index: 1, Data: []byte{}}}},
	} {
		var got raft.AppendEntriesRequest
		if err := decodeAppendEntriesRequest(appendAppendEntriesRequest(nil, req), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&got, req) {
			t.Fatalf("got %#v, want %#v", &got, req)
		}
	}
}

// Every field takes at least one byte, so every strict prefix of an
// encoding must fail to decode, with an error and not a panic.
func TestCodecTruncated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range codecCases {
		v := reflect.New(c.typ)
		fill(t, v.Elem(), r)
		b := c.enc(v.Interface())
		for i := range len(b) {
			if _, err := c.dec(b[:i:i]); err == nil {
				t.Fatalf("%s: a %d-byte prefix of %d bytes decoded without error", c.name, i, len(b))
			}
		}
	}
}

// A corrupt count cannot make the decoder allocate more than the message.
func TestCodecHugeCount(t *testing.T) {
	b := appendAppendEntriesRequest(nil, &raft.AppendEntriesRequest{})
	b = b[:len(b)-1]                            // drop the entries count
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0x0f) // ~2^32 entries
	var got raft.AppendEntriesRequest
	if err := decodeAppendEntriesRequest(b, &got); err == nil {
		t.Fatal("huge entry count accepted")
	}
}
