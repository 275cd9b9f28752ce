//go:build !amd64 && !arm64

package erpc

// loopG is 0 where there is no assembly for it: calls made on the loop
// then go through the command queue, as calls from other goroutines do.
func loopG() uintptr { return 0 }
