//go:build race

package erpc_test

// streamRace: the race detector changes what allocates (sync.Pool drops
// at random), so allocation counts are for the build without it.
const streamRace = true
