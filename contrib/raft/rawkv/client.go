package rawkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/leader"
)

// Client sends commands to the leader through an erpc endpoint of its own,
// follows redirects, moves to the next replica when one does not answer,
// and retries a command under the same (ID, sequence number) until it is
// answered or its context ends, so it is applied at most once. A Client
// runs one command at a time.
type Client struct {
	ID uint64
	// AttemptTimeout bounds one try at one replica (default 500 ms).
	AttemptTimeout time.Duration

	ep     *erpc.Endpoint
	mu     sync.Mutex
	seq    uint64
	router *leader.Router
}

// ErrGaveUp is returned when the context ends before an attempt was
// answered; the command may or may not have been applied.
var ErrGaveUp = leader.ErrGaveUp

// NewClient opens a client endpoint on network ("127.0.0.1:0" for UDP,
// "shm://" for shared memory, "mem://" for memnet) for the replicas at the given addresses. id 0
// picks a random one.
func NewClient(id uint64, network string, replicas []string, opt ...erpc.Option) (*Client, error) {
	for id == 0 || id >= localClient {
		id = rand.Uint64() >> 1
	}
	ep, err := erpc.Listen(network, opt...)
	if err != nil {
		return nil, err
	}
	return &Client{ID: id, ep: ep, AttemptTimeout: 500 * time.Millisecond,
		router: leader.NewRouter(ep, replicas)}, nil
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
	method := MethodPut
	if op == OpGet {
		method = MethodGet
	}
	c.router.AttemptTimeout = c.AttemptTimeout
	// A fresh buffer per command: erpc may read a request's buffer after a
	// call that failed has returned.
	resp, err := c.router.Do(ctx, method, cmd.appendTo(nil), false)
	switch {
	case err != nil:
		return nil, false, err
	case resp[0] == statusOK && len(resp) >= 2:
		return resp[2:], resp[1] == 1, nil
	case resp[0] == statusStale:
		return nil, false, errors.New("rawkv: stale sequence number")
	}
	return nil, false, fmt.Errorf("rawkv: unexpected reply status %d", resp[0])
}
