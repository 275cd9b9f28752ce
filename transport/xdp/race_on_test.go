//go:build race

package xdp

// raceEnabled: the race detector allocates on its own; TestAllocs skips.
const raceEnabled = true
