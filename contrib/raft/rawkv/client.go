package rawkv

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
)

// Client sends commands to the leader through an erpc endpoint of its own,
// follows redirects, moves to the next replica when one does not answer,
// and retries a command under the same (ID, sequence number) until it is
// answered or its context ends, so it is applied at most once. A Client
// runs one command at a time.
type Client struct {
	ID       uint64
	ep       *erpc.Endpoint
	replicas []string
	// AttemptTimeout bounds one try at one replica (default 500 ms).
	AttemptTimeout time.Duration

	mu       sync.Mutex
	seq      uint64
	leader   string
	sessions map[string]*erpc.Session
}

// ErrGaveUp is returned when the context ends before an attempt was
// answered; the command may or may not have been applied.
var ErrGaveUp = errors.New("rawkv: no answer before the deadline")

// NewClient opens a client endpoint on network ("127.0.0.1:0" for UDP,
// "mem://" for memnet) for the replicas at the given addresses. id 0
// picks a random one.
func NewClient(id uint64, network string, replicas []string, opt ...erpc.Option) (*Client, error) {
	for id == 0 || id >= localClient {
		id = rand.Uint64() >> 1
	}
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
	_, _, err := c.do(ctx, OpPut, key, value)
	return err
}

// Get returns key's value, read through the log.
func (c *Client) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	return c.do(ctx, OpGet, key, nil)
}

func (c *Client) do(ctx context.Context, op Op, key, value []byte) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	cmd := command{op: op, client: c.ID, seq: c.seq, key: key, value: value}
	// A fresh buffer per command: erpc may read a request's buffer after a
	// call that failed has returned.
	req := cmd.appendTo(nil)
	method := MethodPut
	if op == OpGet {
		method = MethodGet
	}
	backoff := time.Millisecond
	for {
		if ctx.Err() != nil {
			return nil, false, ErrGaveUp
		}
		target := c.leader
		resp, err := c.try(ctx, target, method, req)
		switch {
		case err != nil || len(resp) == 0:
			c.next(target)
		case resp[0] == statusOK && len(resp) >= 2:
			return resp[2:], resp[1] == 1, nil
		case resp[0] == statusStale:
			return nil, false, errors.New("rawkv: stale sequence number")
		case resp[0] == statusNotLeader && len(resp) > 1:
			if c.leader = string(resp[1:]); c.leader != target {
				continue // redirect at once
			}
		case resp[0] == statusNotLeader:
			c.next(target) // no leader known there: ask another
		}
		// statusRetry, or nobody knew: wait a little.
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, false, ErrGaveUp
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

func (c *Client) try(ctx context.Context, target, method string, req []byte) ([]byte, error) {
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
	return s.Call(actx, method, req, nil)
}
