package tcp

import (
	"github.com/erpc-go/erpc/transport"
)

// Send frames the datagrams onto their peers' connections, a run of
// datagrams to one peer in one write (writev), dialing peers it has no
// connection to; their frames wait in the outbox until it is up.
func (t *Transport) Send(msgs []transport.Message) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	var err error
	for i := 0; i < len(msgs); {
		j := i + 1
		for j < len(msgs) && msgs[j].To == msgs[i].To {
			j++
		}
		run := msgs[i:j]
		i = j
		for k := range run {
			if run[k].Len() > MaxDatagram {
				err = transport.ErrTooLarge
			}
		}
		if c := t.connTo(run[0].To); c != nil {
			c.send(run)
		}
	}
	return err
}

// send writes run to the socket when nothing waits before it, and leaves
// in the outbox what the kernel did not take (or everything, while the
// connection is being set up or the writer is busy).
func (c *conn) send(run []transport.Message) {
	c.mu.Lock()
	if c.dead.Load() {
		c.mu.Unlock()
		return
	}
	written := 0
	var werr error
	if c.ready && len(c.out) == 0 && c.writerIdle() {
		written, werr = c.writeDirect(run)
	}
	if werr == nil {
		c.out = c.appendFrames(c.out, run, written)
	}
	pending := len(c.out) > 0
	if pending {
		c.t.stats.deferred.Add(1)
	}
	ready := c.ready
	c.mu.Unlock()
	if werr != nil {
		c.fail(werr)
		return
	}
	switch {
	case pending && ready:
		c.deferWrite()
	case pending:
		c.kickSetup()
	}
}

// appendFrames appends run's frames to out, less their first skip bytes
// (written already). A frame that would take the outbox past maxOutbox is
// dropped, unless part of it was written: the stream must stay whole.
func (c *conn) appendFrames(out []byte, run []transport.Message, skip int) []byte {
	var head [frameHead]byte
	for i := range run {
		m := &run[i]
		n := m.Len()
		if n > MaxDatagram {
			continue
		}
		size := frameHead + n
		if skip >= size {
			skip -= size
			continue
		}
		if skip == 0 && len(out)+size > maxOutbox {
			c.t.stats.dropped.Add(1)
			continue
		}
		putHead(head[:], n)
		out = appendFrom(out, head[:], &skip)
		out = appendFrom(out, m.Head, &skip)
		out = appendFrom(out, m.Payload, &skip)
	}
	return out
}

// appendFrom appends b less its first *skip bytes, consuming them.
func appendFrom(out, b []byte, skip *int) []byte {
	if *skip >= len(b) {
		*skip -= len(b)
		return out
	}
	out = append(out, b[*skip:]...)
	*skip = 0
	return out
}
