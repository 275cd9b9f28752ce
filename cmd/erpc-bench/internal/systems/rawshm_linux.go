package systems

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// raw-shm is the floor for the same-host path: two processes share a
// mapping of a file in /dev/shm with one slot per call in flight. The
// client copies a request into a slot and publishes its sequence number;
// the server, spinning over the slots, copies the request's first bytes to
// the slot's response area and publishes the number back; the client,
// spinning too, copies the response out. No protocol, no system calls, no
// wake-ups: the cost of moving the bytes and of two cache-line transfers.
//
// The client creates the file for each point, asks the server to map it
// ("map <path> <slots> <cap>" on the control channel), and removes it at
// once: the mappings keep the memory, and nothing is left behind even if a
// process dies. The server spins only between "map" and "unmap".

const (
	shmHeader  = 4096
	shmSlotHdr = 256 // request line (seq, len, resp len), response line (seq)
	shmBudget  = 64 << 20
)

// shmLayout is the geometry of a mapping.
type shmLayout struct{ slots, cap int }

func (l shmLayout) stride() int { return (shmSlotHdr + 2*l.cap + 4095) &^ 4095 }
func (l shmLayout) size() int   { return shmHeader + l.slots*l.stride() }

// shmWord is the 64-bit word at off.
func shmWord(mem []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }

type rawShmServer struct {
	mem    []byte
	lay    shmLayout
	stop   atomic.Bool
	done   chan struct{}
	active bool
}

func newRawShmServer(proc.Config) (proc.Impl, error) { return &rawShmServer{}, nil }

func (s *rawShmServer) Addr() string { return "shm-control" }
func (s *rawShmServer) Close()       { s.unmap() }

func (s *rawShmServer) Control(args []string) (string, error) {
	switch args[0] {
	case "map":
		if len(args) != 4 {
			return "", errors.New("usage: map path slots cap")
		}
		s.unmap()
		slots, err1 := strconv.Atoi(args[2])
		cap, err2 := strconv.Atoi(args[3])
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		lay := shmLayout{slots, cap}
		mem, err := mapFile(args[1], lay.size())
		if err != nil {
			return "", err
		}
		s.mem, s.lay, s.active = mem, lay, true
		s.stop.Store(false)
		s.done = make(chan struct{})
		go s.serve()
		return "", nil
	case "unmap":
		s.unmap()
		return "", nil
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

func (s *rawShmServer) unmap() {
	if !s.active {
		return
	}
	s.stop.Store(true)
	<-s.done
	unix.Munmap(s.mem)
	s.mem, s.active = nil, false
}

func (s *rawShmServer) serve() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mem, lay := s.mem, s.lay
	last := make([]uint64, lay.slots)
	for !s.stop.Load() {
		for i := range lay.slots {
			base := shmHeader + i*lay.stride()
			seq := atomic.LoadUint64(shmWord(mem, base))
			if seq == last[i] {
				continue
			}
			last[i] = seq
			n := int(atomic.LoadUint64(shmWord(mem, base+8)))
			want := int(atomic.LoadUint64(shmWord(mem, base+16)))
			req := mem[base+shmSlotHdr : base+shmSlotHdr+lay.cap]
			resp := mem[base+shmSlotHdr+lay.cap : base+shmSlotHdr+2*lay.cap]
			copy(resp[:want], req[:min(n, want)])
			atomic.StoreUint64(shmWord(mem, base+128), seq)
		}
	}
}

func mapFile(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

type rawShmClient struct {
	srv *proc.Server
	seq int
}

func newRawShmClient(srv *proc.Server) (meter.Client, error) { return &rawShmClient{srv: srv}, nil }

func (c *rawShmClient) Close() {}

// ShmInflight caps the slots so the mapping fits the budget.
func ShmInflight(p meter.Point) int {
	cap := (max(p.Size, p.Resp, 64) + 63) &^ 63
	return min(p.Conc, max(1, shmBudget/(2*cap)))
}

func (c *rawShmClient) Run(p meter.Point, m *meter.Meter) error {
	lay := shmLayout{slots: ShmInflight(p), cap: (max(p.Size, p.Resp, 64) + 63) &^ 63}
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	c.seq++
	path := fmt.Sprintf("%s/erpc-bench-%d-%d", dir, os.Getpid(), c.seq)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	err = f.Truncate(int64(lay.size()))
	var mem []byte
	if err == nil {
		mem, err = unix.Mmap(int(f.Fd()), 0, lay.size(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	f.Close()
	if err != nil {
		return err
	}
	defer unix.Munmap(mem)
	if _, err := c.srv.Ctl(fmt.Sprintf("map %s %d %d", path, lay.slots, lay.cap)); err != nil {
		return fmt.Errorf("raw-shm server: %w", err)
	}
	os.Remove(path)
	defer c.srv.Ctl("unmap")
	return spinShm(p, m, mem, lay)
}

// spinShm drives the slots from one goroutine locked to its thread.
func spinShm(p meter.Point, m *meter.Meter, mem []byte, lay shmLayout) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rec := m.Recorder()
	req := meter.Payload(p.Size)
	resp := make([]byte, p.Resp)
	seqs := make([]uint64, lay.slots)
	t0 := make([]time.Time, lay.slots)
	issue := func(i int) {
		base := shmHeader + i*lay.stride()
		t0[i] = time.Now()
		copy(mem[base+shmSlotHdr:], req)
		atomic.StoreUint64(shmWord(mem, base+8), uint64(p.Size))
		atomic.StoreUint64(shmWord(mem, base+16), uint64(p.Resp))
		seqs[i]++
		atomic.StoreUint64(shmWord(mem, base), seqs[i])
	}
	for i := range lay.slots {
		issue(i)
	}
	active := lay.slots
	spins := 0
	for active > 0 {
		progress := false
		for i := range lay.slots {
			if seqs[i] == 0 {
				continue
			}
			base := shmHeader + i*lay.stride()
			if atomic.LoadUint64(shmWord(mem, base+128)) != seqs[i] {
				continue
			}
			progress = true
			copy(resp, mem[base+shmSlotHdr+lay.cap:base+shmSlotHdr+lay.cap+p.Resp])
			rec.Done(m, t0[i], nil)
			if m.Stopped() {
				seqs[i] = 0 // retired; the server saw its last number
				active--
				continue
			}
			issue(i)
		}
		if progress {
			spins = 0
		} else if spins++; spins&(1<<20-1) == 0 {
			for i := range lay.slots {
				if seqs[i] != 0 && time.Since(t0[i]) > 5*time.Second {
					return errors.New("raw-shm server stopped answering")
				}
			}
		}
	}
	return nil
}
