// Package kv is a small MICA-style key-value store served by erpc-go: GET
// and SET of 16-byte keys and 64-512 byte values, held in memory in a hash
// table split into partitions by the key's hash.
//
// What it keeps from MICA (Lim et al., NSDI'14): keys hashed once, the
// hash's bits choosing a partition, each partition an index plus value
// memory allocated up front, so that serving a request allocates nothing;
// fixed key and bounded value sizes; a lossless "store" mode (a SET that
// finds its partition full fails instead of evicting).
//
// What it simplifies: MICA's index is a bucketed, lossy table of 16-bit
// tags and log offsets, and its values live in a circular log; here each
// partition's index is a Go map from key to a fixed 512-byte slot (values
// never move, the largest value fits every slot, no compaction). MICA gives
// each core its own partition (EREW) and has clients steer requests to the
// owning core; erpc-go has no such steering, so each partition has a mutex
// instead (lock striping), which makes the store correct whichever
// goroutine or core serves a request. Keys are never deleted.
//
// Serving it:
//
//	st := kv.NewStore(kv.Config{Capacity: 1 << 16})
//	srv := erpc.NewServer()
//	if err := kv.Register(srv, st); err != nil { ... }
//	ep, err := srv.Listen("127.0.0.1:31860")
//
// and calling it, from a session to that address:
//
//	err := kv.Set(ctx, s, key, value)
//	v, err := kv.Get(ctx, s, key, buf)
//
// Run `go run ./examples/kv/kvserver -demo` for a server and a client in
// one process, or `-addr` to serve.
package kv

import (
	"errors"
	"hash/maphash"
	"math"
	"sync"
)

// Sizes the store accepts.
const (
	KeySize  = 16
	MinValue = 64
	MaxValue = 512
)

// Errors of Store's methods; the erpc handlers turn them into
// InvalidArgument (sizes), NotFound and ResourceExhausted.
var (
	ErrKeySize   = errors.New("kv: key must be 16 bytes")
	ErrValueSize = errors.New("kv: value must be 64 to 512 bytes")
	ErrNotFound  = errors.New("kv: no such key")
	ErrFull      = errors.New("kv: partition full")
)

// Config sizes a Store.
type Config struct {
	// Capacity is the number of keys the store can hold (spread over the
	// partitions by hash, with head room for the spread's imbalance: a
	// partition that fills up refuses new keys). Default 65536.
	Capacity int
	// Partitions is rounded up to a power of two. Default 64.
	Partitions int
}

// Store is the table. It is safe for concurrent use.
type Store struct {
	seed  maphash.Seed
	parts []partition
	mask  uint64
}

type partition struct {
	mu    sync.Mutex
	index map[[KeySize]byte]int32 // key -> slot
	vals  []byte                  // slot i is vals[i*MaxValue : (i+1)*MaxValue]
	lens  []uint16                // the length of slot i's value
	used  int32                   // slots handed out; they are never freed
	_     [64]byte                // keeps neighbouring partitions' locks off one cache line
}

// NewStore allocates a store and all its value memory.
func NewStore(c Config) *Store {
	if c.Capacity <= 0 {
		c.Capacity = 1 << 16
	}
	if c.Partitions <= 0 {
		c.Partitions = 64
	}
	n := 1
	for n < c.Partitions {
		n <<= 1
	}
	// Head room for the hash's spread over the partitions: the keys of a
	// partition are binomial, about mean ± sqrt(mean); four of those is
	// more than any of a few hundred partitions sees.
	mean := float64(c.Capacity) / float64(n)
	per := int(mean + mean/8 + 4*math.Sqrt(mean) + 4)
	s := &Store{seed: maphash.MakeSeed(), parts: make([]partition, n), mask: uint64(n - 1)}
	for i := range s.parts {
		p := &s.parts[i]
		p.index = make(map[[KeySize]byte]int32, per)
		p.vals = make([]byte, per*MaxValue)
		p.lens = make([]uint16, per)
	}
	return s
}

func (s *Store) part(key []byte) *partition {
	return &s.parts[maphash.Bytes(s.seed, key)&s.mask]
}

// Get copies key's value into dst (which must hold MaxValue bytes to be
// sure of room) and returns it.
func (s *Store) Get(key, dst []byte) ([]byte, error) {
	if len(key) != KeySize {
		return nil, ErrKeySize
	}
	p := s.part(key)
	p.mu.Lock()
	slot, ok := p.index[[KeySize]byte(key)]
	if !ok {
		p.mu.Unlock()
		return nil, ErrNotFound
	}
	n := int(p.lens[slot])
	dst = append(dst[:0], p.vals[int(slot)*MaxValue:int(slot)*MaxValue+n]...)
	p.mu.Unlock()
	return dst, nil
}

// Set stores a copy of value under key.
func (s *Store) Set(key, value []byte) error {
	if len(key) != KeySize {
		return ErrKeySize
	}
	if len(value) < MinValue || len(value) > MaxValue {
		return ErrValueSize
	}
	p := s.part(key)
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [KeySize]byte(key)
	slot, ok := p.index[k]
	if !ok {
		if int(p.used) == len(p.lens) {
			return ErrFull
		}
		slot = p.used
		p.used++
		p.index[k] = slot
	}
	copy(p.vals[int(slot)*MaxValue:], value)
	p.lens[slot] = uint16(len(value))
	return nil
}

// Len returns the number of keys stored.
func (s *Store) Len() int {
	n := 0
	for i := range s.parts {
		p := &s.parts[i]
		p.mu.Lock()
		n += len(p.index)
		p.mu.Unlock()
	}
	return n
}
