//go:build !race

package erpc_test

const streamRace = false
