package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// PinProcess restricts every thread of this process to cpu. Affinity is
// per thread on Linux and new threads inherit their creator's, so setting
// it on every existing thread pins the whole Go runtime, including the
// threads it starts later. It also sets GOMAXPROCS to 1, which is what Go
// chooses by itself in a process started with taskset on one CPU: two Ps
// on one CPU would make the kernel time-slice two runnable threads (a
// spinning event loop and the goroutines it serves) instead of letting
// the Go scheduler switch goroutines. An explicit GOMAXPROCS in the
// environment is left alone.
func PinProcess(cpu int) error {
	if err := pinThreads(cpu); err != nil {
		return err
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	return nil
}

func pinThreads(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return unix.SchedSetaffinity(0, &set)
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NumCPU counts the CPUs this process may run on.
func NumCPU() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	return set.Count()
}

// setDeathSignal kills the server if the client dies without closing it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
