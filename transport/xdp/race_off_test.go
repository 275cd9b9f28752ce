//go:build !race

package xdp

const raceEnabled = false
