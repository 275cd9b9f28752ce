package kvstore

import (
	"context"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/leader"
)

// Client talks to the replicas through one erpc endpoint of its own. It
// sends every command to the replica it believes leads, follows NotLeader
// redirects, tries the next replica when one does not answer, and retries
// a command with the same (client id, sequence number) until its context
// ends, so that the FSM applies it at most once however often it is sent.
// A Client runs one command at a time.
type Client struct {
	ID uint64
	// AttemptTimeout bounds one try at one replica (default 500 ms).
	AttemptTimeout time.Duration
	// ReadAnyReplica sends Gets to a random replica instead of the leader:
	// with StaleReads replicas, this is the broken variant.
	ReadAnyReplica bool

	ep     *erpc.Endpoint
	mu     sync.Mutex
	seq    uint64
	router *leader.Router
}

// NewClient opens a client endpoint on network ("127.0.0.1:0" for UDP,
// "shm://" for shared memory, "mem://" for memnet) for the given replica addresses.
func NewClient(id uint64, network string, replicas []string, opt ...erpc.Option) (*Client, error) {
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
var ErrGaveUp = leader.ErrGaveUp

// Do runs one command, retrying until it gets an answer or ctx ends.
func (c *Client) Do(ctx context.Context, op Op, key, value []byte) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	cmd := Command{Op: op, Client: c.ID, Seq: c.seq, Key: key, Value: value}
	c.router.AttemptTimeout = c.AttemptTimeout
	resp, err := c.router.Do(ctx, MethodDo, cmd.appendTo(nil), op == OpGet && c.ReadAnyReplica)
	if err != nil {
		return Result{}, err
	}
	if resp[0] != statusOK {
		return Result{}, errCorrupt
	}
	return decodeResult(resp)
}
