package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// serve starts a store's server on the in-memory network and returns a
// session to it.
func serve(t *testing.T, st *Store, hopts []erpc.HandlerOption, opts ...erpc.Option) *erpc.Session {
	t.Helper()
	srv := erpc.NewServer()
	if err := Register(srv, st, hopts...); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://kv-test-%s", t.Name()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func key(i int) []byte {
	k := make([]byte, KeySize)
	copy(k, fmt.Sprintf("key-%011d", i))
	return k
}

func value(i, n int) []byte {
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i + j*7)
	}
	return v
}

func TestSetGet(t *testing.T) {
	s := serve(t, NewStore(Config{Capacity: 1000}), nil)
	ctx := context.Background()
	for i, n := range []int{MinValue, 100, 333, MaxValue} {
		if err := Set(ctx, s, key(i), value(i, n)); err != nil {
			t.Fatalf("set %d: %v", i, err)
		}
	}
	// Overwrite with a shorter value: the old tail must not come back.
	if err := Set(ctx, s, key(3), value(9, 70)); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for i, n := range []int{MinValue, 100, 333, 70} {
		want := value(i, n)
		if i == 3 {
			want = value(9, 70)
		}
		v, err := Get(ctx, s, key(i), buf)
		if err != nil || !bytes.Equal(v, want) {
			t.Fatalf("get %d: %d bytes, %v", i, len(v), err)
		}
		buf = v
	}
	if _, err := Get(ctx, s, key(99), nil); erpc.CodeOf(err) != erpc.NotFound {
		t.Errorf("missing key: %v, want NotFound", err)
	}
}

func TestWrongSizes(t *testing.T) {
	s := serve(t, NewStore(Config{Capacity: 100}), nil)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		method string
		req    []byte
	}{
		{"get short key", MethodGet, make([]byte, KeySize-1)},
		{"get long key", MethodGet, make([]byte, KeySize+1)},
		{"get empty", MethodGet, nil},
		{"set short value", MethodSet, make([]byte, KeySize+MinValue-1)},
		{"set long value", MethodSet, make([]byte, KeySize+MaxValue+1)},
		{"set key only", MethodSet, make([]byte, KeySize)},
		{"set empty", MethodSet, nil},
	} {
		if _, err := s.Call(ctx, c.method, c.req, nil); erpc.CodeOf(err) != erpc.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", c.name, err)
		}
	}
	if err := Set(ctx, s, make([]byte, KeySize-1), value(0, 100)); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Errorf("Set with a 15-byte key: %v", err)
	}
	// The edges are accepted.
	for _, n := range []int{MinValue, MaxValue} {
		if _, err := s.Call(ctx, MethodSet, SetRequest(nil, key(1), value(1, n)), nil); err != nil {
			t.Errorf("set of %d bytes: %v", n, err)
		}
	}
}

func TestFull(t *testing.T) {
	st := NewStore(Config{Capacity: 1, Partitions: 1})
	s := serve(t, st, nil)
	ctx := context.Background()
	var err error
	i := 0
	for ; i < 10 && err == nil; i++ {
		err = Set(ctx, s, key(i), value(i, 64))
	}
	if erpc.CodeOf(err) != erpc.ResourceExhausted {
		t.Fatalf("after %d keys: %v, want ResourceExhausted", i, err)
	}
	// Keys already there can still be overwritten.
	if err := Set(ctx, s, key(0), value(5, 80)); err != nil {
		t.Errorf("overwrite in a full store: %v", err)
	}
	if st.Len() != i-1 {
		t.Errorf("Len %d, want %d", st.Len(), i-1)
	}
}

// TestConcurrent serves from background workers, so handlers run on
// several goroutines at once (the race detector watches the partitions'
// locks), and checks every key's last value.
func TestConcurrent(t *testing.T) {
	s := serve(t, NewStore(Config{Capacity: 4096, Partitions: 4}), []erpc.HandlerOption{erpc.Background()},
		erpc.WithWorkers(4), erpc.WithQueueDepth(256))
	ctx := context.Background()
	const writers, keys = 8, 64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			var buf []byte
			for round := range 20 {
				for k := w * keys; k < (w+1)*keys; k++ {
					if err := Set(ctx, s, key(k), value(k+round, 64+k%400)); err != nil {
						errs <- err
						return
					}
					v, err := Get(ctx, s, key(k), buf)
					if err != nil || !bytes.Equal(v, value(k+round, 64+k%400)) {
						errs <- fmt.Errorf("key %d round %d: %d bytes, %v", k, round, len(v), err)
						return
					}
					buf = v
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCapacity: a store takes as many keys as it was sized for, whatever
// their spread over the partitions.
func TestCapacity(t *testing.T) {
	for _, c := range []Config{{Capacity: 1000}, {Capacity: 100, Partitions: 64}, {Capacity: 1 << 16}, {Capacity: 5000, Partitions: 3}} {
		st := NewStore(c)
		v := value(0, MinValue)
		for i := range c.Capacity {
			if err := st.Set(key(i), v); err != nil {
				t.Fatalf("%+v: key %d: %v", c, i, err)
			}
		}
		if st.Len() != c.Capacity {
			t.Errorf("%+v: Len %d", c, st.Len())
		}
	}
}

func TestStoreErrors(t *testing.T) {
	st := NewStore(Config{})
	if _, err := st.Get(make([]byte, 3), nil); !errors.Is(err, ErrKeySize) {
		t.Error(err)
	}
	if err := st.Set(key(1), make([]byte, MaxValue+1)); !errors.Is(err, ErrValueSize) {
		t.Error(err)
	}
	if err := st.Set(key(1), make([]byte, MinValue)); err != nil {
		t.Error(err)
	}
	if v, err := st.Get(key(1), make([]byte, 0, MaxValue)); err != nil || len(v) != MinValue {
		t.Errorf("%d %v", len(v), err)
	}
}

// TestStoreAllocs: Set and Get allocate nothing.
func TestStoreAllocs(t *testing.T) {
	st := NewStore(Config{Capacity: 16})
	k, v := key(1), value(1, 200)
	buf := make([]byte, MaxValue)
	if n := testing.AllocsPerRun(100, func() {
		_ = st.Set(k, v)
		_, _ = st.Get(k, buf)
	}); n != 0 {
		t.Errorf("%v allocations per Set+Get", n)
	}
}
