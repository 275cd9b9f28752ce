//go:build !linux || (!amd64 && !arm64)

package erpc

// loopG is 0 off Linux on amd64 and arm64 (the platforms its assembly
// is written and checked for: TestLoopGIdentifiesGoroutine): calls made
// on the loop then go through the command queue, as calls from other
// goroutines do.
func loopG() uintptr { return 0 }
