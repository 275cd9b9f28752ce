package kvstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
)

// Client talks to the replicas through one erpc endpoint of its own. It
// sends every command to the replica it believes leads, follows NotLeader
// redirects, tries the next replica when one does not answer, and retries
// a command with the same (client id, sequence number) until its context
// ends, so that the FSM applies it at most once however often it is sent.
// A Client runs one command at a time.
type Client struct {
	ID       uint64
	ep       *erpc.Endpoint
	replicas []string
	// AttemptTimeout bounds one try at one replica (default 500 ms).
	AttemptTimeout time.Duration
	// ReadAnyReplica sends Gets to a random replica instead of the leader:
	// with StaleReads replicas, this is the broken variant.
	ReadAnyReplica bool

	mu       sync.Mutex
	seq      uint64
	leader   string
	sessions map[string]*erpc.Session
	buf      []byte
}

// NewClient opens a client endpoint on network ("127.0.0.1:0" for UDP,
// "mem://" for memnet) for the given replica addresses.
func NewClient(id uint64, network string, replicas []string, opt ...erpc.Option) (*Client, error) {
	ep, err := erpc.Listen(network, opt...)
	if err != nil {
		return nil, err
	}
	return &Client{ID: id, ep: ep, replicas: replicas, leader: replicas[0],
		AttemptTimeout: 500 * time.Millisecond, sessions: make(map[string]*erpc.Session)}, nil
}

// Close closes the client's endpoint.
func (c *Client) Close() error { return c.ep.Close() }

// Put stores value under key.
func (c *Client) Put(ctx context.Context, key, value []byte) error {
	_, err := c.Do(ctx, OpPut, key, value)
	return err
}

// Get returns key's value.
func (c *Client) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	r, err := c.Do(ctx, OpGet, key, nil)
	return r.Value, r.Found, err
}

// Append appends value to key's value and returns the result.
func (c *Client) Append(ctx context.Context, key, value []byte) ([]byte, error) {
	r, err := c.Do(ctx, OpAppend, key, value)
	return r.Value, err
}

// ErrGaveUp is returned when ctx ends before any attempt got an answer;
// the command may or may not have been applied.
var ErrGaveUp = errors.New("kvstore: no answer before the deadline")

// Do runs one command, retrying until it gets an answer or ctx ends.
func (c *Client) Do(ctx context.Context, op Op, key, value []byte) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	cmd := Command{Op: op, Client: c.ID, Seq: c.seq, Key: key, Value: value}
	// A fresh buffer per command: erpc may still read a request's buffer
	// after a Call that failed returned (seen under -race with loss).
	c.buf = cmd.appendTo(nil)
	backoff := time.Millisecond
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return Result{}, ErrGaveUp
		}
		target := c.leader
		if op == OpGet && c.ReadAnyReplica {
			target = c.replicas[rand.IntN(len(c.replicas))]
		}
		resp, err := c.try(ctx, target)
		switch {
		case err != nil:
			c.next(target)
		case resp[0] == statusOK:
			return decodeResult(resp)
		case resp[0] == statusNotLeader && len(resp) > 1:
			c.leader = string(resp[1:])
			if c.leader != target {
				continue // redirect at once
			}
		case resp[0] == statusNotLeader:
			c.next(target) // no leader known there: ask another
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return Result{}, ErrGaveUp
		}
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// next moves on from a replica that failed.
func (c *Client) next(failed string) {
	for i, r := range c.replicas {
		if r == failed {
			c.leader = c.replicas[(i+1)%len(c.replicas)]
			return
		}
	}
	c.leader = c.replicas[0]
}

func (c *Client) try(ctx context.Context, target string) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.AttemptTimeout)
	defer cancel()
	s := c.sessions[target]
	if s == nil {
		var err error
		if s, err = c.ep.Dial(actx, target); err != nil {
			return nil, err
		}
		c.sessions[target] = s
	}
	resp, err := s.Call(actx, MethodDo, c.buf, nil)
	if err != nil {
		return nil, err
	}
	if len(resp) == 0 {
		return nil, errCorrupt
	}
	return resp, nil
}
