//go:build amd64 || arm64

package erpc

// loopG returns the address of the calling goroutine's runtime record (its
// g): a goroutine's identity in two instructions, where goroutineID reads
// it from a stack trace in microseconds. The loop compares it with its own
// to let user code on the loop start calls without the command queue
// (startOnLoop). A g is never freed (a goroutine that exits leaves it for
// a later one to reuse), so an address the loop published stays the
// loop's until the loop withdraws it (loopWatch.setLoop).
func loopG() uintptr
